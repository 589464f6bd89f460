package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Tokens are the bearer tokens of --auth-token-file: one per line, TOKEN or
// TOKEN,NAME (the name goes into the request log and the audit rows of what
// the caller asked). The file is read again when it changes, so tokens
// rotate without a restart and a token removed from the file is refused
// from the next look on. A malformed line is skipped with a warning that
// names its line, never its text. A file that is missing, cannot be read
// or holds no valid token refuses every token until it holds one again:
// emptying or deleting the file is how an operator revokes them all, so it
// must never leave the old ones valid (fail closed).
type Tokens struct {
	path string
	now  func() time.Time
	logf func(msg string, args ...any)

	mu      sync.Mutex
	sums    []tokenEntry
	skipped []int
	// file is what was read of the file last; lastAt is the last look.
	file   watchedFile
	lastAt time.Time
	// problem says why every token is refused, since problemSince; ""
	// while the file holds tokens.
	problem      string
	problemSince time.Time
}

type tokenEntry struct {
	sum  [sha256.Size]byte
	name string
}

// errNoToken: the file was read but holds no valid line.
var errNoToken = errors.New("holds no valid token")

// LoadTokens reads the token file at path; an unreadable file, or one with
// no valid token, is an error: the daemon does not start without a way in.
// A malformed line is skipped as on a reload, so that a file the running
// daemon took also starts it again.
func LoadTokens(path string, logf func(msg string, args ...any)) (*Tokens, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	t := &Tokens{path: path, now: time.Now, logf: logf, file: watchedFile{path: path}}
	data, _, err := t.file.read(t.now())
	f := tokenFileOf(data, err)
	switch {
	case errors.Is(f.err, errNoToken):
		return nil, fmt.Errorf("--auth-token-file %s %w", path, f.err)
	case f.err != nil:
		return nil, fmt.Errorf("--auth-token-file: %w", f.err)
	}
	t.apply(f)
	return t, nil
}

// tokenFile is what one read of the file found.
type tokenFile struct {
	entries []tokenEntry
	skipped []int
	// err: the file could not be read, or errNoToken.
	err error
}

// tokenFileOf parses what a read of the file returned.
func tokenFileOf(data []byte, err error) tokenFile {
	if err != nil {
		return tokenFile{err: err}
	}
	var f tokenFile
	f.entries, f.skipped = parseTokens(data)
	if len(f.entries) == 0 {
		f.err = errNoToken
	}
	return f
}

// parseTokens returns the file's tokens and the numbers of the lines
// skipped as malformed.
func parseTokens(data []byte) (entries []tokenEntry, skipped []int) {
	// Editors on Windows start a UTF-8 file with a byte-order mark; it is
	// not part of the first token.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		token, name, _ := strings.Cut(line, ",")
		token, name = strings.TrimSpace(token), strings.TrimSpace(name)
		if token == "" || strings.ContainsAny(token, " \t") {
			skipped = append(skipped, n)
			continue
		}
		if name == "" {
			name = fmt.Sprintf("token-%d", n)
		}
		entries = append(entries, tokenEntry{sha256.Sum256([]byte(token)), name})
	}
	return entries, skipped
}

// look reads the file again when it may have changed, at most once per
// recheckEvery: a stat, and a read when the stat moved, the last read
// failed or is older than rereadEvery. Callers hold t.mu.
func (t *Tokens) look() {
	now := t.now()
	if now.Sub(t.lastAt) < recheckEvery {
		return
	}
	t.lastAt = now
	if !t.file.stale(now) {
		return
	}
	// An unchanged content is not taken again: a file that holds no
	// valid token would log its skipped lines at every read. One that
	// could not be read counts as changed, so it is tried again.
	data, changed, err := t.file.read(now)
	if !changed {
		return
	}
	t.apply(tokenFileOf(data, err))
}

// apply makes a read of the file the tokens in use, logging what changed:
// the lines skipped, all tokens refused and why, or tokens back.
func (t *Tokens) apply(f tokenFile) {
	if len(f.skipped) > 0 {
		t.logf("auth token file: lines skipped, want TOKEN or TOKEN,NAME (their text is not logged)",
			"path", t.path, "lines", f.skipped)
	}
	t.sums, t.skipped = f.entries, f.skipped
	if f.err == nil {
		if t.problem != "" {
			t.logf("auth token file holds valid tokens again", "path", t.path, "tokens", len(f.entries))
		}
		t.problem = ""
		return
	}
	problem := errNoToken.Error()
	if !errors.Is(f.err, errNoToken) {
		problem = "cannot be read: " + pathErrorCause(f.err)
	}
	if problem == t.problem {
		return
	}
	if t.problem == "" {
		t.problemSince = t.now()
	}
	t.problem = problem
	t.logf("every bearer token is refused until the auth token file holds a valid one",
		"path", t.path, "reason", "the file "+problem)
}

// pathErrorCause is an error without the path a *fs.PathError adds: the
// reason goes out on /readyz, which anyone may read.
func pathErrorCause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Check returns the name of the token, or false. Every token is compared,
// each in constant time, so the time taken says nothing of which matched
// or how much of one did.
func (t *Tokens) Check(token string) (string, bool) {
	t.mu.Lock()
	t.look()
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

// TokenFileStatus is --auth-token-file as /status shows it.
type TokenFileStatus struct {
	// Tokens counts the valid tokens in use.
	Tokens int `json:"tokens"`
	// SkippedLines are the numbers of the lines skipped as malformed.
	SkippedLines []int `json:"skippedLines,omitempty"`
	// Error says why every token is refused (the file cannot be read or
	// holds no valid token), and Since since when.
	Error string     `json:"error,omitempty"`
	Since *time.Time `json:"since,omitempty"`
}

// Status looks at the file as a request would, so that a probe learns of
// an edit even when no request carries a token, and says what it holds.
func (t *Tokens) Status() TokenFileStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.look()
	st := TokenFileStatus{Tokens: len(t.sums), SkippedLines: t.skipped, Error: t.problem}
	if t.problem != "" {
		since := t.problemSince.UTC()
		st.Since = &since
	}
	return st
}

// revoked says why every token is refused, or "".
func (t *Tokens) revoked() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.problem
}

// bearerToken returns the token of an Authorization header of the Bearer
// scheme, whose name RFC 7235 makes case-insensitive; blanks around the
// token are tolerated.
func bearerToken(header string) (string, bool) {
	header = strings.TrimSpace(header)
	i := strings.IndexAny(header, " \t")
	if i < 0 || !strings.EqualFold(header[:i], "Bearer") {
		return "", false
	}
	token := strings.TrimSpace(header[i:])
	return token, token != ""
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
		if openPaths[r.URL.Path] || !isAPIPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		who := ""
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			who = "cert:" + r.TLS.VerifiedChains[0][0].Subject.CommonName
		} else if s.Tokens != nil {
			if token, ok := bearerToken(r.Header.Get("Authorization")); ok {
				if name, ok := s.Tokens.Check(token); ok {
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
				if problem := s.Tokens.revoked(); problem != "" {
					msg += ": all bearer tokens are revoked (--auth-token-file " + problem + ")"
				}
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
