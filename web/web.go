// Package web holds the UI's static files: plain JavaScript modules, CSS and,
// under vendor/, the graph library's built files that make web copies from
// npm (committed, so that go build alone embeds them).
package web

import "embed"

// FS is the UI, served at / by the daemon.
//
//go:embed index.html app.css js vendor
var FS embed.FS
