package httpapi

import (
	"errors"
	"net/http"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/catalog"
)

// "Remember what I opened" (package inbox): the settings page's form
// (POST /settings/remember-opened, _remember_opened.html), the API's
// PUT /v1/me/remember-opened and the mails' signed redirect GET
// /open/{token}.

// postRememberOpened is POST /settings/remember-opened: csrf, on ("1" when
// checked; absent when not).
func (s *Settings) postRememberOpened(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, false, func(v *viewer) (string, error) {
		return "saved", s.Inbox.SetRememberOpened(r.Context(), v.userID, r.PostFormValue("on") != "")
	})
}

// openLink is GET /open/{token}: a mail's "Open" (and mark read) link. A
// GET (never a HEAD) marks the paper read when the user has "remember what I opened" on
// (inbox.Service.Opened: never when it is off, and a paper marked done
// stays done), then sends the user on to the paper's arXiv page (303).
// A forged, altered or revoked link, or a paper no longer stored, is a
// 404 page.
func (p *EmailPages) openLink(w http.ResponseWriter, r *http.Request) {
	if p.limited(w, r) {
		return
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	userID, paperID, err := p.Addresses.CheckOpen(r.Context(), r.PathValue("token"))
	if err != nil {
		if errors.Is(err, auth.ErrBadLink) {
			renderPage(w, r, p.Logger, http.StatusNotFound, "message.html", page{Title: "This link is not valid",
				Lines: []string{"This link is not valid any more. Open the paper from your most recent followfeed mail, or from your inbox."}})
			return
		}
		writeError(w, r, p.Logger, err)
		return
	}
	papers, err := p.Matcher.LoadPapers(r.Context(), []int64{paperID}, catalog.WithoutAbstract)
	if err != nil {
		writeError(w, r, p.Logger, err)
		return
	}
	if len(papers) == 0 || papers[0].AbsURL == "" {
		renderPage(w, r, p.Logger, http.StatusNotFound, "message.html", page{Title: "No such paper",
			Lines: []string{"This paper is no longer stored here."}})
		return
	}
	// Only a GET is the reader opening the paper: a HEAD (a link
	// checker, a mail scanner) gets the same answer and records nothing.
	if r.Method == http.MethodGet {
		if _, err := p.Inbox.Opened(r.Context(), userID, paperID); err != nil {
			writeError(w, r, p.Logger, err)
			return
		}
	}
	http.Redirect(w, r, papers[0].AbsURL, http.StatusSeeOther)
}

// rememberOpenedJSON is the API's form of the choice.
type rememberOpenedJSON struct {
	RememberOpened bool `json:"remember_opened"`
}

// getRememberOpened is GET /v1/me/remember-opened.
func (a *API) getRememberOpened(w http.ResponseWriter, r *http.Request, u *account.User) error {
	on, err := a.Inbox.RememberOpened(r.Context(), u.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rememberOpenedJSON{RememberOpened: on})
	return nil
}

// putRememberOpened is PUT /v1/me/remember-opened: {"remember_opened":
// true | false}.
func (a *API) putRememberOpened(w http.ResponseWriter, r *http.Request, u *account.User) error {
	var body struct {
		RememberOpened *bool `json:"remember_opened"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	if body.RememberOpened == nil {
		return apperr.InvalidField("remember_opened", `say true (mark the papers you open from a mail read) or false`)
	}
	if err := a.Inbox.SetRememberOpened(r.Context(), u.ID, *body.RememberOpened); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rememberOpenedJSON{RememberOpened: *body.RememberOpened})
	return nil
}
