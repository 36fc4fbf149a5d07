package httpapi

import (
	"net/http"
	"strconv"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/paper"
)

// putIdentities stores the host's researcher or institution records.
func (a *API) putIdentities(kind follow.Kind) http.HandlerFunc {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.service(w, r, auth.ScopePapersWrite, "registering "+string(kind)+"s") {
			return
		}
		if !jsonish(r.Header.Get("Content-Type")) {
			writeError(w, r, a.Logger, apperr.New(apperr.BadRequest, "Content-Type must be application/json or application/x-ndjson"))
			return
		}
		recs, err := identity.DecodeRecords(kind, r.Body) // capped by its route (limitBody)
		if err != nil {
			writeError(w, r, a.Logger, err)
			return
		}
		res, err := a.Identities.Put(r.Context(), recs)
		if err != nil {
			writeError(w, r, a.Logger, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

type identityJSON struct {
	Kind       string   `json:"kind"`
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	OtherNames []string `json:"other_names"`
	Country    string   `json:"country,omitempty"`
	IDs        []string `json:"ids"`
	Followers  int64    `json:"followers"`
	Following  *bool    `json:"following,omitempty"`
}

func toIdentityJSON(i identity.Identity) identityJSON {
	name := i.Name
	if name == "" {
		name = i.ID // an identity nobody has named shows its id
	}
	others := i.OtherNames
	if others == nil {
		others = []string{}
	}
	return identityJSON{Kind: string(i.Kind), ID: i.ID, Name: name, OtherNames: others, Country: i.Country,
		IDs: i.IDs, Followers: i.Followers, Following: i.Following}
}

// getIdentity is public; a user token adds "following".
func (a *API) getIdentity(kind follow.Kind) http.HandlerFunc {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := identity.ParseID(kind, r.PathValue("id"))
		if err != nil {
			writeError(w, r, a.Logger, err)
			return
		}
		userID, signedIn, ok := a.optionalUser(w, r)
		if !ok {
			return
		}
		ident, err := a.Identities.Lookup(r.Context(), kind, id, userID)
		if err != nil {
			writeError(w, r, a.Logger, err)
			return
		}
		if signedIn {
			w.Header().Set("Cache-Control", "private, no-store")
		} else {
			w.Header().Set("Cache-Control", "public, max-age=30")
		}
		w.Header().Add("Vary", "Authorization")
		writeJSON(w, http.StatusOK, toIdentityJSON(ident))
	})
}

// optionalUser reads an optional user token: userID 0 without one, -1 for
// a signed-in user without a row yet. A bad token has been answered 401
// (ok false).
func (a *API) optionalUser(w http.ResponseWriter, r *http.Request) (userID int64, signedIn, ok bool) {
	claims, err := a.bearer(r)
	if err != nil {
		a.writeAuthError(w, r, err)
		return 0, false, false
	}
	if claims == nil || claims.IsService() {
		return 0, false, true
	}
	u, err := a.Users.FindBySub(r.Context(), claims.Subject)
	if err != nil {
		writeError(w, r, a.Logger, err)
		return 0, false, false
	}
	if u == nil {
		return -1, true, true
	}
	return u.ID, true, true
}

// splitIdentity takes an id off a researcher or institution (service).
func (a *API) splitIdentity(kind follow.Kind) http.HandlerFunc {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.service(w, r, auth.ScopePapersWrite, "splitting "+string(kind)+"s") {
			return
		}
		id, err := identity.ParseID(kind, r.PathValue("id"))
		if err != nil {
			writeError(w, r, a.Logger, err)
			return
		}
		other, err := identity.ParseID(kind, r.PathValue("other"))
		if err != nil {
			if ae, ok := apperr.As(err); ok {
				ae.Field = "other"
			}
			writeError(w, r, a.Logger, err)
			return
		}
		ident, err := a.Identities.Split(r.Context(), kind, id, other)
		if err != nil {
			writeError(w, r, a.Logger, err)
			return
		}
		writeJSON(w, http.StatusOK, toIdentityJSON(ident))
	})
}

// listDisputes lists users' "not this person" for the host (service).
func (a *API) listDisputes(w http.ResponseWriter, r *http.Request) {
	if !a.service(w, r, auth.ScopePapersWrite, "listing disputed attributions") {
		return
	}
	id, err := identity.ParseID(follow.Researcher, r.PathValue("id"))
	if err != nil {
		writeError(w, r, a.Logger, err)
		return
	}
	limit := 0
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, r, a.Logger, apperr.InvalidField("limit", "must be a whole number from 1 to 1000"))
			return
		}
		limit = n
	}
	ds, err := a.Identities.Disputes(r.Context(), id, limit)
	if err != nil {
		writeError(w, r, a.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Disputes []identity.Dispute `json:"disputes"`
	}{ds})
}

// notThisPerson: the signed-in user says the paper is not by the
// researcher their follow {"id": …} means. 204.
func (a *API) notThisPerson(w http.ResponseWriter, r *http.Request, u *account.User) error {
	arxivID, _, err := paper.ParseArxivID(r.PathValue("arxiv_id"))
	if err != nil {
		return apperr.InvalidField("arxiv_id", "%q is not an arXiv id; ids look like 2202.02326 or astro-ph/9901001", r.PathValue("arxiv_id"))
	}
	var body struct {
		ID *string `json:"id"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	if body.ID == nil {
		return apperr.InvalidField("id", "name the researcher follow the paper is not by, e.g. {\"id\": \"openalex:A5023888391\"}")
	}
	t, err := follow.ParseTarget(string(follow.Researcher), *body.ID)
	if err != nil {
		return err
	}
	if err := a.Identities.NotThisPerson(r.Context(), u.ID, t, arxivID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
