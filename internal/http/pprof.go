package http

import (
	"math"
	"net/http"
	"net/http/pprof"
	runtimepprof "runtime/pprof"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
)

// maxProfileSeconds bounds ?seconds= of a profile or a trace: pprof itself
// pushes the write deadline back by as long as asked, so without it one
// request could hold a connection and the profiler for any time.
const maxProfileSeconds = 120

// profiler serves Go's pprof handlers under /debug/pprof/: the runtime's
// profiles, the CPU profile, the execution trace and symbol lookup for
// go tool pprof. Not the command line (pprof's cmdline, expvar's
// /debug/vars): it may carry flags meant for this host only.
func (s *server) profiler() http.Handler {
	r := chi.NewRouter()
	r.Use(capProfileSeconds)
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		// The index links to its profiles relatively: it must be read
		// from /debug/pprof/.
		if !strings.HasSuffix(r.URL.Path, "/") {
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
			return
		}
		pprof.Index(w, r)
	})
	r.Get("/profile", pprof.Profile)
	r.Get("/trace", pprof.Trace)
	r.Get("/symbol", pprof.Symbol)
	r.Post("/symbol", pprof.Symbol)
	r.Get("/{profile}", func(w http.ResponseWriter, r *http.Request) {
		if runtimepprof.Lookup(chi.URLParam(r, "profile")) == nil {
			s.notFound(w, r)
			return
		}
		pprof.Index(w, r) // serves the profile its path names
	})
	return r
}

// capProfileSeconds refuses a ?seconds= that is not a duration pprof
// would honour as given, or is longer than maxProfileSeconds: pprof
// silently takes 30 s for a CPU profile whose seconds it cannot read.
func capProfileSeconds(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := newQuery(r)
		if s := q.str("seconds"); q.err == nil && s != "" {
			n, err := strconv.ParseFloat(s, 64)
			// Only a trace takes fractions of a second.
			whole := !strings.HasSuffix(r.URL.Path, "/trace")
			switch {
			case n > maxProfileSeconds: // +Inf too, also from an overflow
				q.fail("invalid seconds %q: a profile or trace lasts at most %d seconds (2 minutes)", s, maxProfileSeconds)
			case err != nil || !(n > 0) || whole && n != math.Trunc(n):
				q.fail("invalid seconds %q: want a whole number of seconds from 1 to %d (a trace takes fractions)", s, maxProfileSeconds)
			}
		}
		if q.err != nil {
			writeError(w, r, http.StatusBadRequest, q.err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}
