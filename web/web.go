// Package web holds the UI's static files.
package web

import "embed"

// FS is the UI, served at / by the daemon.
//
//go:embed index.html
var FS embed.FS
