package apperr_test

import (
	"errors"
	"testing"

	"followfeed/apperr"
)

// TestRefieldRenamesACopy: the field and every detail's field are
// renamed in a copy, the message kept, err itself left as it was; an
// error that is not an *Error passes through.
func TestRefieldRenamesACopy(t *testing.T) {
	orig := apperr.InvalidField("id", "not an id")
	orig.Details = []apperr.Detail{{Index: 1, Field: "id", Reason: "bad"}}
	err := apperr.Refield(orig, "follow.id")
	e, ok := apperr.As(err)
	if !ok || e.Field != "follow.id" || e.Details[0].Field != "follow.id" || e.Message != "not an id" || e.Code != apperr.Invalid {
		t.Fatalf("Refield = %+v", e)
	}
	if orig.Field != "id" || orig.Details[0].Field != "id" {
		t.Errorf("Refield changed the error it was given: %+v", orig)
	}
	plain := errors.New("disk full")
	if got := apperr.Refield(plain, "x"); got != plain {
		t.Errorf("Refield of a plain error = %v, want it as it was", got)
	}
}
