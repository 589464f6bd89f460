package api

import "embed"

// Source holds this package's Go files. The OpenAPI document takes each
// type's and field's description from their doc comments, so that the
// served document says what the compiled code says.
//
//go:embed *.go
var Source embed.FS
