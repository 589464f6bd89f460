// Package docs holds kubegcd's documentation. It embeds the API's OpenAPI
// document, openapi.json, which make docs writes and GET /openapi/v3 serves
// as it is committed. Its tests keep the docs honest: sizes, links and
// anchors, and that every route and figure is where a reader looks for it.
package docs

import _ "embed"

// OpenAPI is the API's OpenAPI 3.1 document, as make docs wrote it.
//
//go:embed openapi.json
var OpenAPI []byte
