// Command oapiclient is built by TestGeneratedClient in a temporary module
// beside the client that oapi-codegen generates from openapi.json (package
// apiclient). It calls a few routes through that client, the way a host
// that generated its client would, and prints one JSON line per call.
//
// Usage: oapiclient BASE_URL USER_TOKEN
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"oapiclienttest/apiclient"
)

type line struct {
	Call      string   `json:"call"`
	Status    int      `json:"status"`
	Followers int      `json:"followers,omitempty"`
	Following *bool    `json:"following,omitempty"`
	Name      string   `json:"name,omitempty"`
	IDs       []string `json:"ids,omitempty"`
	Detail    string   `json:"detail,omitempty"`
	Field     string   `json:"field,omitempty"`
	OPML      string   `json:"opml,omitempty"`
	PerFollow string   `json:"opml_per_follow,omitempty"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: oapiclient BASE_URL USER_TOKEN")
		os.Exit(2)
	}
	base, token := os.Args[1], os.Args[2]
	ctx := context.Background()
	anon, err := apiclient.NewClientWithResponses(base)
	check(err)
	user, err := apiclient.NewClientWithResponses(base, apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	check(err)
	out := json.NewEncoder(os.Stdout)
	emit := func(l line) { check(out.Encode(l)) }

	st, err := anon.GetFollowStatusWithResponse(ctx, apiclient.KindCategory, "cs.LG")
	check(err)
	l := line{Call: "getFollowStatus anonymous", Status: st.StatusCode()}
	if st.JSON200 != nil {
		l.Followers, l.Following, l.Name = st.JSON200.Followers, st.JSON200.Following, st.JSON200.Name
	}
	emit(l)

	label := "Machine learning"
	f, err := user.FollowWithResponse(ctx, apiclient.KindCategory, "cs.LG", apiclient.FollowJSONRequestBody{Label: &label})
	check(err)
	l = line{Call: "follow", Status: f.StatusCode()}
	if f.JSON201 != nil {
		l.Name, l.IDs = f.JSON201.Name, []string{f.JSON201.Id}
	}
	emit(l)

	bad, err := user.FollowWithResponse(ctx, apiclient.KindCategory, "no.such", apiclient.FollowJSONRequestBody{})
	check(err)
	l = line{Call: "follow invalid", Status: bad.StatusCode()}
	if bad.ApplicationproblemJSON422 != nil {
		l.Detail = bad.ApplicationproblemJSON422.Detail
		if bad.ApplicationproblemJSON422.Field != nil {
			l.Field = *bad.ApplicationproblemJSON422.Field
		}
	}
	emit(l)

	ls, err := user.ListMyFollowsWithResponse(ctx, &apiclient.ListMyFollowsParams{})
	check(err)
	l = line{Call: "listMyFollows", Status: ls.StatusCode()}
	if ls.JSON200 != nil {
		for _, f := range ls.JSON200.Follows {
			l.IDs = append(l.IDs, string(f.Kind)+"/"+f.Id)
		}
	}
	emit(l)

	st, err = user.GetFollowStatusWithResponse(ctx, apiclient.KindCategory, "cs.LG")
	check(err)
	l = line{Call: "getFollowStatus signed in", Status: st.StatusCode()}
	if st.JSON200 != nil {
		l.Followers, l.Following = st.JSON200.Followers, st.JSON200.Following
	}
	emit(l)

	fd, err := user.GetMyFeedsWithResponse(ctx)
	check(err)
	l = line{Call: "getMyFeeds", Status: fd.StatusCode()}
	if fd.JSON200 != nil {
		l.OPML, l.PerFollow = fd.JSON200.Opml, fd.JSON200.OpmlPerFollow
	}
	emit(l)

	un, err := user.UnfollowWithResponse(ctx, apiclient.KindCategory, "cs.LG")
	check(err)
	emit(line{Call: "unfollow", Status: un.StatusCode()})

	me, err := anon.GetMeWithResponse(ctx)
	check(err)
	l = line{Call: "getMe anonymous", Status: me.StatusCode()}
	if me.ApplicationproblemJSON401 != nil {
		l.Detail = me.ApplicationproblemJSON401.Detail
	}
	emit(l)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
