package harvest

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"followfeed/internal/text"
	"followfeed/internal/upstream"
)

// This file is the OAI-PMH ListIdentifiers verb: the repository's own list
// of a set's records for a span of datestamps, which the completeness check
// compares with what was stored.

// IdentifierPage is one ListIdentifiers response.
type IdentifierPage struct {
	// IDs are the arXiv ids (without version) of the page's records that
	// are not deleted, in order.
	IDs []string
	// Deleted counts headers with status="deleted".
	Deleted int
	// ResumptionToken continues the list; "" when this is the last page.
	ResumptionToken string
	// CompleteListSize is the token's completeListSize, -1 if unknown.
	CompleteListSize int
}

type oaiIDEnvelope struct {
	Errors          []oaiXMLError       `xml:"error"`
	ListIdentifiers *oaiListIdentifiers `xml:"ListIdentifiers"`
}

type oaiListIdentifiers struct {
	Headers []oaiHeader `xml:"header"`
	Token   *oaiToken   `xml:"resumptionToken"`
}

// ListIdentifiers fetches and parses one ListIdentifiers page of req (the
// same arguments as ListRecords; metadataPrefix is the client's format).
// Outcomes are ListRecords': noRecordsMatch is an empty page and no error,
// other OAI-PMH errors an *OAIError, retries and ErrUpstream as there, a body
// that is not a ListIdentifiers response (or over the cap) ErrMalformed.
func (c *OAIClient) ListIdentifiers(ctx context.Context, req ListRequest) (*IdentifierPage, error) {
	u, err := c.requestURL("ListIdentifiers", req)
	if err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH identifiers: %w", err)
	}
	if err := c.pace(ctx); err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH identifiers: waiting between pages: %w", err)
	}
	resp, err := upstream.Fetch(ctx, c.get, u)
	c.markDone()
	if err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH identifiers: %w", err)
	}
	page, oaiErr, err := oaiParseIDs(resp.Body)
	if resp.Status/100 != 2 && oaiErr == nil {
		return nil, fmt.Errorf("fetching OAI-PMH identifiers: %w", resp.StatusError())
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("fetching OAI-PMH identifiers: %w", err)
	case oaiErr != nil && oaiErr.Code == "noRecordsMatch":
		return &IdentifierPage{IDs: []string{}, CompleteListSize: 0}, nil
	case oaiErr != nil:
		return nil, fmt.Errorf("fetching OAI-PMH identifiers: %w", oaiErr)
	}
	return page, nil
}

func oaiParseIDs(body []byte) (*IdentifierPage, *OAIError, error) {
	var env oaiIDEnvelope
	if err := oaiDecode(body, &env); err != nil {
		return nil, nil, err
	}
	if len(env.Errors) > 0 {
		e := env.Errors[0]
		return nil, &OAIError{Code: text.Collapse(e.Code, 100), Message: text.Collapse(e.Message, 1000)}, nil
	}
	if env.ListIdentifiers == nil {
		return nil, nil, oaiMalformed("response has neither <ListIdentifiers> nor <error>")
	}
	page := &IdentifierPage{IDs: []string{}, CompleteListSize: -1}
	if tok := env.ListIdentifiers.Token; tok != nil {
		page.ResumptionToken = strings.TrimSpace(tok.Value)
		if len(page.ResumptionToken) > oaiMaxTokenBytes || !utf8.ValidString(page.ResumptionToken) {
			return nil, nil, oaiMalformed("resumptionToken is longer than %d bytes or not UTF-8", oaiMaxTokenBytes)
		}
		page.CompleteListSize = oaiAttrInt(tok.CompleteListSize)
	}
	for _, h := range env.ListIdentifiers.Headers {
		if strings.TrimSpace(h.Status) == "deleted" {
			page.Deleted++
			continue
		}
		if id, ok := oaiArxivID(h.Identifier, ""); ok {
			page.IDs = append(page.IDs, id)
		}
	}
	return page, nil, nil
}
