package http

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
)

// uiETags returns each UI file's ETag: a hash of its content, computed once
// at start. The embedded files carry no modification time, so without one
// a browser would download the whole UI (720 KB of graph libraries) again
// on every visit instead of revalidating it.
func uiETags(ui fs.FS) (map[string]string, error) {
	tags := map[string]string{}
	err := fs.WalkDir(ui, ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(ui, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		tags[name] = `"` + hex.EncodeToString(sum[:16]) + `"`
		return nil
	})
	return tags, err
}

// serveUI serves one UI file with its ETag; no-cache makes the browser
// ask each time, and a matching If-None-Match is answered 304 without the
// body, by http.ServeContent.
func (s *server) serveUI(w http.ResponseWriter, r *http.Request, name string) {
	if tag, ok := s.uiETags[name]; ok {
		w.Header().Set("ETag", tag)
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeFileFS(w, r, s.UI, name)
}
