package follow

import (
	"strings"
	"testing"

	"followfeed/apperr"
)

func TestQueryTargets(t *testing.T) {
	for in, want := range map[string]string{
		`"Diffusion Model" AND (cat:cs.LG OR cat:cs.CV) -survey`: `"diffusion model" (cat:cs.LG OR cat:cs.CV) -survey`,
		`au:"Mingzhi Wen"`:   `au:"mingzhi wen"`,
		`graph cat:CS`:       `graph cat:cs`,
		`graph cat:math.IT`:  `graph cat:cs.IT`, // an alias: canonical
		`transformer NOT cv`: `transformer -cv`,
	} {
		tg, err := ParseTarget("query", in)
		if err != nil {
			t.Fatalf("ParseTarget(query, %q): %v", in, err)
		}
		if tg.ID != want || tg.Key() != "query:"+want {
			t.Errorf("ParseTarget(query, %q) = %q (key %q), want %q", in, tg.ID, tg.Key(), want)
		}
		back, err := TargetFromKey(tg.Key())
		if err != nil || back != tg {
			t.Errorf("TargetFromKey(%q) = %v, %v", tg.Key(), back, err)
		}
		if got := tg.ReasonName("", nil); got != "the query "+want {
			t.Errorf("ReasonName = %q", got)
		}
	}
}

func TestQueryTargetErrors(t *testing.T) {
	t.Log("hostile: a bad query is a 422 naming the position and what was expected")
	for in, want := range map[string]string{
		`"unbalanced`:            `at character 1: expected a closing "`,
		`graph cat:cs.ZZ`:        `at character 11: "cs.ZZ" is not an active arXiv category`,
		`-survey`:                `only exclusions`,
		`the`:                    `common words`,
		`foo:bar`:                `unknown field "foo:"`,
		`cat:cs.LG`:              `follow the category instead`,
		strings.Repeat("x", 301): `at most 300 characters`,
	} {
		_, err := ParseTarget("query", in)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid || e.Field != "id" || !strings.Contains(e.Message, want) || len(e.Details) != 1 || e.Details[0].Index < 1 {
			t.Errorf("ParseTarget(query, %q) = %v, want Invalid id …%s… with a position", in, err, want)
		}
	}
}

func TestPaperTargets(t *testing.T) {
	for in, want := range map[string]string{
		"2202.02326": "2202.02326", "2202.02326v3": "2202.02326", "arXiv:2202.02326": "2202.02326",
		"https://arxiv.org/abs/2202.02326v2": "2202.02326", "0704.0001": "0704.0001",
		"ArXiv:2202.02326": "2202.02326", "arxiv.org/abs/2202.02326": "2202.02326", "https://arxiv.org/pdf/2202.02326v1.pdf": "2202.02326",
		"astro-ph/9901001": "astro-ph/9901001", "math.GT/0309136v1": "math.GT/0309136", "hep-th/9504118": "hep-th/9504118",
	} {
		tg, err := ParseTarget("paper", in)
		if err != nil || tg.ID != want || tg.Key() != "paper:"+want {
			t.Errorf("ParseTarget(paper, %q) = %v, %v; want %s", in, tg, err, want)
		}
		if back, err := TargetFromKey(tg.Key()); err != nil || back != tg {
			t.Errorf("TargetFromKey(%q) = %v, %v", tg.Key(), back, err)
		}
	}
	for _, bad := range []string{"", "2202", "2202.023", "astro-ph/99", "../etc/passwd", "2202.02326v", "ASTRO-PH/9901001",
		// Ids arXiv cannot have, as POST /v1/papers refuses them: month 13
		// or 99, five digits before 1501, four after, version 0.
		"2613.00001", "9999.99999", "1412.00001", "1501.0001", "2202.02326v0"} {
		if _, err := ParseTarget("paper", bad); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("ParseTarget(paper, %q) = %v, want Invalid", bad, err)
		}
	}
	// A follow an earlier, looser release stored stays readable from its
	// key (its user can see and remove it); a key of another shape not.
	for _, key := range []string{"paper:9999.99999", "paper:2613.00001"} {
		if tg, err := TargetFromKey(key); err != nil || tg.Key() != key {
			t.Errorf("TargetFromKey(%q) = %v, %v; want the stored follow", key, tg, err)
		}
	}
	for _, key := range []string{"paper:2202.02326v2", "paper:../x", "paper:"} {
		if _, err := TargetFromKey(key); err == nil {
			t.Errorf("TargetFromKey(%q) took it", key)
		}
	}
}
