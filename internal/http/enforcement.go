package http

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/kubegcd/kubegcd/internal/api"
)

// The release endpoint's answers besides success; a Releaser wraps one of
// these so that the endpoint picks its status code without knowing the
// applier.
var (
	// ErrNotHeld: no manual hold is in force (409).
	ErrNotHeld = errors.New("enforcement is not held")
	// ErrLedgerUnavailable: the release cannot be recorded, so it is not
	// made (503).
	ErrLedgerUnavailable = errors.New("audit history cannot be written")
)

// Ledger tells whether the audit history can be written. While it cannot,
// enforcement is paused and /readyz is 503 with the reason.
type Ledger interface {
	// LedgerError is nil while audit rows are written; otherwise it says
	// why not, in one line.
	LedgerError() error
}

// Releaser ends a manual hold of the blast-radius cap.
type Releaser interface {
	// Release records the operator's release (by names who asked) and
	// resumes enforcement; an error wrapping ErrNotHeld when nothing is held,
	// ErrLedgerUnavailable when the release cannot be recorded.
	Release(ctx context.Context, reason, by string) error
}

// maxReasonLen bounds the reason an operator gives: it is stored as is.
const maxReasonLen = 1000

// maxWhoLen bounds each part of who asked for a release that comes from
// the request (the caller's name, the User-Agent): the audit row and the
// log keep them, and a client picks them.
const maxWhoLen = 256

// release is POST /enforcement/release. Until the API authenticates, it
// takes only a JSON body: a browser cannot send one to another origin
// without a CORS preflight, which kubegcd never grants, so a page the
// operator visits cannot release enforcement behind their back.
func (s *server) release(w http.ResponseWriter, r *http.Request) {
	if s.Releaser == nil {
		writeError(w, r, http.StatusNotFound, "no controllers run here: nothing to release")
		return
	}
	// It takes no query parameter: one it ignored, such as a hoped-for
	// preview, would release all the same. One object, then only white
	// space: a second one would be ignored, and the client would not learn
	// which reason was recorded.
	var req api.ReleaseRequest
	if !readJSONBody(w, r, &req, "POST /enforcement/release", `{"reason": "..."}`,
		`: want one {"reason": "..."}`) {
		return
	}
	req.Reason = strings.TrimSpace(req.Reason)
	if len(req.Reason) > maxReasonLen {
		writeError(w, r, http.StatusBadRequest, "reason too long: at most 1000 bytes")
		return
	}
	err := s.Releaser.Release(r.Context(), req.Reason, who(r))
	switch {
	case err == nil:
		writeJSON(w, r, http.StatusOK, api.ReleaseResult{Status: api.StatusReleased})
	case errors.Is(err, ErrNotHeld):
		writeError(w, r, http.StatusConflict, err.Error())
	case errors.Is(err, ErrLedgerUnavailable):
		// The store's state is what /readyz shows too; the release waits
		// for it, as every write does.
		writeError(w, r, http.StatusServiceUnavailable, "the release cannot be recorded, so it is not made: "+err.Error())
	default:
		s.internalError(w, r, err)
	}
}

// clip returns s, its invalid UTF-8 replaced, or if it is longer than n
// bytes its start cut on a rune boundary and marked with "…", n bytes at
// most in all.
func clip(s string, n int) string {
	const mark = "…"
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	end := n - len(mark)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}

// readJSONBody reads the body of a POST that takes no query parameter and
// one JSON object, of Content-Type application/json and at most 64 KiB,
// into v. A query parameter, another Content-Type, an unknown field, a body
// that is not the object or data after it are answered with the error,
// naming route, the body wanted, and afterMore after the trailing data's
// message; it then returns false. An empty body leaves v as it is.
func readJSONBody(w http.ResponseWriter, r *http.Request, v any, route, want, afterMore string) bool {
	q := newQuery(r)
	q.known()
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, r, http.StatusUnsupportedMediaType, route+" takes Content-Type: application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, r, http.StatusBadRequest, "invalid body: want "+want+": "+err.Error())
		return false
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		writeError(w, r, http.StatusBadRequest, "invalid body: data after the JSON object"+afterMore)
		return false
	}
	return true
}
