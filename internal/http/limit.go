package http

import (
	"net/http"
)

// limitInflight answers a request beyond n served at once with a 429 and
// Retry-After, as kube-apiserver's --max-requests-inflight does, rather than
// queueing it: a burst of API clients then costs them a retry, not the
// daemon its memory and its database connections. Health checks pass
// always, so that a busy API never looks like a dead process. n = 0: no
// limit.
func limitInflight(n int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if n <= 0 {
			return next
		}
		slots := make(chan struct{}, n)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
				next.ServeHTTP(w, r)
				return
			}
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
				next.ServeHTTP(w, r)
			default:
				w.Header().Set("Retry-After", "1")
				writeError(w, r, http.StatusTooManyRequests, "too many requests in flight (--max-requests-inflight); retry")
			}
		})
	}
}

// securityHeaders keeps browsers from guessing content types, from framing
// the UI in another site's page, and from sending the UI's URLs (object
// names) to other sites.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
