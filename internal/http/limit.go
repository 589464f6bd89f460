package http

import (
	"net/http"
)

// inflightSlots bound the API requests the server serves at once, as
// kube-apiserver's --max-requests-inflight does: one set for the whole
// server, whichever route a request takes. A request beyond them gets a 429
// and Retry-After at once rather than a queue: a burst of API clients then
// costs them a retry, not the daemon its memory and its database
// connections. Health checks always pass, so that a busy API never looks
// like a dead process, and so do the UI's own files, which hold no data and
// cost next to nothing. Nil: no bound.
type inflightSlots chan struct{}

func newInflightSlots(n int) inflightSlots {
	if n <= 0 {
		return nil
	}
	return make(inflightSlots, n)
}

// limit is the middleware that takes a slot for each request, or refuses it.
func (slots inflightSlots) limit(next http.Handler) http.Handler {
	if slots == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || !isAPIPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			writeError(w, r, http.StatusTooManyRequests,
				"too many requests in flight (--max-requests-inflight); retry")
		}
	})
}

// contentSecurityPolicy lets the UI run only the scripts and styles it
// ships, talk only to this API, and be framed by no page. The one inline
// style allowed, by its hash, is the stylesheet cytoscape adds to the page
// (web/vendor/cytoscape); a new version of it with another stylesheet fails
// the browser tests until the hash follows.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; " +
	"style-src 'self' 'sha256-pgvDUBa4IjFA2yuSJ2cqcyxmNYJMborsd0ORcRv9vw8='; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders keeps browsers from running anything but the UI's own
// files, from guessing content types, from framing the UI in another site's
// page, and from sending the UI's URLs (object names) to other sites.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
