package identity_test

import (
	"strings"
	"testing"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/identity"
)

func TestDecodeRecordsReadsArraysAndNDJSON(t *testing.T) {
	array := `[{"ids": ["host:1955166", "openalex:A5023888391", "s2:1741101"], "name": "Mingzhi  Wen", "other_names": ["M. Wen"]}]`
	ndjson := `{"ids": ["1955166", "https://openalex.org/A5023888391", "s2:1741101"], "name": "Mingzhi Wen", "other_names": ["M. Wen"]}` + "\n\n"
	for name, body := range map[string]string{"array": array, "ndjson": ndjson} {
		recs, err := identity.DecodeRecords(follow.Researcher, strings.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(recs) != 1 || strings.Join(recs[0].IDs, ",") != "host:1955166,openalex:A5023888391,s2:1741101" ||
			recs[0].Name != "Mingzhi Wen" || len(recs[0].OtherNames) != 1 {
			t.Errorf("%s: %+v", name, recs)
		}
	}
	// dblp person ids, numeric and legacy, as ids or links.
	recs, err := identity.DecodeRecords(follow.Researcher, strings.NewReader(
		`[{"ids": ["dblp:w/MingzhiWen", "https://dblp.org/pid/177/9741-2.html", "host:1955166"], "name": "Mingzhi Wen"}]`))
	if err != nil || strings.Join(recs[0].IDs, ",") != "dblp:w/MingzhiWen,dblp:177/9741-2,host:1955166" {
		t.Fatalf("dblp ids: %+v %v", recs, err)
	}
	recs, err = identity.DecodeRecords(follow.Institution, strings.NewReader(`{"ids": ["https://ror.org/05ppvf150", "openalex:I4210166736"], "name": "Impactstory", "country": "us"}`))
	if err != nil || recs[0].Country != "US" || recs[0].IDs[0] != "ror:05ppvf150" {
		t.Fatalf("%+v %v", recs, err)
	}
}

// Every bad record of a batch is reported, by index and field, in one 422.
func TestDecodeRecordsNamesEveryBadRecordAndField(t *testing.T) {
	t.Log("hostile: a bad registry batch is refused whole with a 422 naming each record and field")
	long := strings.Repeat("x", identity.MaxName+1)
	body := strings.Join([]string{
		`{"ids": ["host:1"], "name": "fine"}`,
		`{"ids": ["dblp:homepages/w/MingzhiWen"]}`,    // a dblp record key, not a person id
		`{"ids": ["orcid:0000-0002-1825-0098"]}`,      // bad ORCID checksum
		`{"ids": []}`,                                 // no ids
		`{"ids": ["host:5"], "name": "` + long + `"}`, // name too long
		`{"ids": ["s2:9", "host:1"]}`,                 // host:1 is record 0's
		`{"ids": ["host:7"], "nmae": "typo"}`,         // unknown field
		`{"ids": ["host:8"], "country": "US"}`,        // researchers have no country
		`{"ids": "host:9"}`,                           // wrong type
		`{"ids": ["scholar:abc"]}`,                    // unknown scheme
	}, "\n")
	_, err := identity.DecodeRecords(follow.Researcher, strings.NewReader(body))
	ae, ok := apperr.As(err)
	if !ok || ae.Code != apperr.Invalid {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	want := map[int]string{1: "ids[0]", 2: "ids[0]", 3: "ids", 4: "name", 5: "ids[1]", 6: "nmae", 7: "country", 8: "ids", 9: "ids[0]"}
	if len(ae.Details) != len(want) {
		t.Fatalf("details %+v", ae.Details)
	}
	for _, d := range ae.Details {
		if want[d.Index] != d.Field || d.Reason == "" {
			t.Errorf("record %d: field %q (%s), want field %q", d.Index, d.Field, d.Reason, want[d.Index])
		}
	}
	_, err = identity.DecodeRecords(follow.Institution, strings.NewReader(`[{"ids": ["ror:05ppvf151"]}]`))
	if ae, ok := apperr.As(err); !ok || ae.Details[0].Field != "ids[0]" || !strings.Contains(ae.Details[0].Reason, "checksum") {
		t.Errorf("bad ROR checksum: %v", err)
	}
	for _, bad := range []string{"", "   ", "[", "nonsense", `[{"ids":["host:1"]}] trailing`} {
		_, err := identity.DecodeRecords(follow.Researcher, strings.NewReader(bad))
		if apperr.CodeOf(err) != apperr.BadRequest {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestDecodeRecordsStripBidirectionalControlsFromNames: the host's names
// kept U+202E and line separators, which every follower's feeds and
// digests then showed reordered (a security review finding).
func TestDecodeRecordsStripBidirectionalControlsFromNames(t *testing.T) {
	t.Log("hostile: names")
	recs, err := identity.DecodeRecords(follow.Researcher, strings.NewReader(
		`{"ids": ["host:77"], "name": "\u202EMingzhi\u2028Wen", "other_names": ["\u2067M. Wen\u2069", "Wen\u2029M.\u200E"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].Name != "Mingzhi Wen" || strings.Join(recs[0].OtherNames, "|") != "M. Wen|Wen M." {
		t.Errorf("name %q, other names %q", recs[0].Name, recs[0].OtherNames)
	}
}
