package match

import (
	"encoding/json"
	"strconv"
	"testing"

	"followfeed/internal/testdb"
)

// TestHeadStaysBelowJITThreshold: the validator statement once joined
// match_state, whose statistics a one-row table often lacks; the planner
// then costed it at 2,200 rows, which multiplied the heads' estimate past
// jit_above_cost, and every validator recomputation spent 0.6 s compiling
// (the load soak's feed polls took 10 s). On a fresh database, with no
// statistics at all, its estimate must stay below the threshold.
func TestHeadStaysBelowJITThreshold(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := t.Context()
	var threshold string
	if err := db.Pool.QueryRow(ctx, `SELECT current_setting('jit_above_cost')`).Scan(&threshold); err != nil {
		t.Fatal(err)
	}
	limit, err := strconv.ParseFloat(threshold, 64)
	if err != nil {
		t.Fatal(err)
	}
	var plan []byte
	if err := db.Pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+headSQL, int64(1)).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Plan struct {
			TotalCost float64 `json:"Total Cost"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("plan %s: %v", plan, err)
	}
	if c := doc[0].Plan.TotalCost; c >= limit {
		t.Errorf("the validator statement is estimated at %.0f, at or above jit_above_cost (%.0f): it would be JIT-compiled on every call", c, limit)
	}
}
