package http

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Tokens are the bearer tokens of --auth-token-file: one per line, TOKEN or
// TOKEN,NAME (the name goes into the request log and the audit rows of what
// the caller asked). The file is read again when it changes, so tokens
// rotate without a restart; a file that cannot be read or parsed keeps the
// tokens already loaded, and says so in the log.
type Tokens struct {
	path   string
	now    func() time.Time
	logf   func(msg string, args ...any)
	mu     sync.Mutex
	sums   []tokenEntry
	stat   fileStamp
	lastAt time.Time
}

type tokenEntry struct {
	sum  [sha256.Size]byte
	name string
}

// fileStamp tells a file changed: its size and modification time.
type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.Size(), fi.ModTime()}, nil
}

// recheckEvery bounds how often a changed file is looked for.
const recheckEvery = time.Second

// LoadTokens reads the token file at path; an unreadable file, or one with
// no token, is an error.
func LoadTokens(path string, logf func(msg string, args ...any)) (*Tokens, error) {
	t := &Tokens{path: path, now: time.Now, logf: logf}
	if err := t.reload(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Tokens) reload() error {
	stamp, err := stampOf(t.path)
	if err != nil {
		return fmt.Errorf("--auth-token-file: %w", err)
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return fmt.Errorf("--auth-token-file: %w", err)
	}
	entries, err := parseTokens(data)
	if err != nil {
		return fmt.Errorf("--auth-token-file %s: %w", t.path, err)
	}
	t.sums, t.stat = entries, stamp
	return nil
}

func parseTokens(data []byte) ([]tokenEntry, error) {
	var out []tokenEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		token, name, _ := strings.Cut(line, ",")
		token, name = strings.TrimSpace(token), strings.TrimSpace(name)
		if token == "" || strings.ContainsAny(token, " \t") {
			return nil, fmt.Errorf("line %d: want TOKEN or TOKEN,NAME", n)
		}
		if name == "" {
			name = fmt.Sprintf("token-%d", n)
		}
		out = append(out, tokenEntry{sha256.Sum256([]byte(token)), name})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no token in the file")
	}
	return out, nil
}

// Check returns the name of the token, or false. Every token is compared,
// each in constant time, so the time taken says nothing of which matched
// or how much of one did.
func (t *Tokens) Check(token string) (string, bool) {
	t.mu.Lock()
	if now := t.now(); now.Sub(t.lastAt) >= recheckEvery {
		t.lastAt = now
		if stamp, err := stampOf(t.path); err != nil || stamp != t.stat {
			if err := t.reload(); err != nil {
				t.logf("auth token file not reloaded; the tokens loaded before stay", "err", err)
			}
		}
	}
	entries := t.sums
	t.mu.Unlock()
	sum := sha256.Sum256([]byte(token))
	name, ok := "", false
	for _, e := range entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			name, ok = e.name, true
		}
	}
	return name, ok
}

// callerKey holds, in a request's context, where authenticate writes who
// the caller is, for the request log.
type callerKey struct{}

// Caller is who made the request: a token's name, a client certificate's
// subject, or "" when the API does not authenticate.
func Caller(ctx context.Context) string {
	if p, ok := ctx.Value(callerKey{}).(*string); ok {
		return *p
	}
	return ""
}

// authenticate lets a request through when it carries a known bearer token
// or a client certificate the client CA verified; health checks and the
// UI's static files always. With
// neither tokens nor a client CA it lets everything through (the daemon
// refuses to start so on a non-loopback address unless told to).
func (s *server) authenticate(next http.Handler) http.Handler {
	if s.Tokens == nil && !s.ClientCerts {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Health checks are for probes; the UI's own files hold no data, and
		// a browser loads them before it can send a token.
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || !isAPIPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		who := ""
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			who = "cert:" + r.TLS.VerifiedChains[0][0].Subject.CommonName
		} else if s.Tokens != nil {
			if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				if name, ok := s.Tokens.Check(strings.TrimSpace(token)); ok {
					who = name
				}
			}
		}
		if who == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kubegcd"`)
			msg := "authentication required: send Authorization: Bearer TOKEN (a token of --auth-token-file)"
			switch {
			case s.Tokens == nil:
				msg = "authentication required: present a client certificate signed by --client-ca-file"
			case s.ClientCerts:
				msg += " or a client certificate signed by --client-ca-file"
			}
			if s.Tokens != nil && r.Header.Get("Authorization") != "" {
				msg = "the bearer token is not valid"
			}
			writeError(w, r, http.StatusUnauthorized, msg)
			return
		}
		if p, ok := r.Context().Value(callerKey{}).(*string); ok {
			*p = who
		}
		next.ServeHTTP(w, r)
	})
}

// authentication names how the API knows its callers, for /status.
func (s *server) authentication() string {
	switch {
	case s.Tokens != nil && s.ClientCerts:
		return "token, client-certificate"
	case s.Tokens != nil:
		return "token"
	case s.ClientCerts:
		return "client-certificate"
	}
	return "none"
}
