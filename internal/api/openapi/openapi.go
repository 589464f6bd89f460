// Package openapi builds the OpenAPI 3.1 document of kubegcd's HTTP API:
// its paths and parameters from a table of this package, its schemas
// reflected from the types of package api with their doc comments, so that
// the document cannot drift from what the server writes.
package openapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"

	"github.com/kubegcd/kubegcd/internal/api"
)

// Version is the document's info.version: the API's, not kubegcd's, so
// that the document is the same for every build.
const Version = "1"

// document is the OpenAPI object, its fields in the order the
// specification lists them.
type document struct {
	OpenAPI           string                    `json:"openapi"`
	Info              map[string]any            `json:"info"`
	JSONSchemaDialect string                    `json:"jsonSchemaDialect"`
	Paths             map[string]map[string]any `json:"paths"`
	Components        components                `json:"components"`
	Security          []map[string][]string     `json:"security"`
}

type components struct {
	Schemas         map[string]*jsonschema.Schema `json:"schemas"`
	Responses       map[string]any                `json:"responses"`
	SecuritySchemes map[string]any                `json:"securitySchemes"`
}

var (
	once   sync.Once
	doc    []byte
	docErr error
)

// JSON is the document, indented, with a final newline; built once.
func JSON() ([]byte, error) {
	once.Do(func() { doc, docErr = build() })
	return doc, docErr
}

// errorCodes say when the server answers each error status.
var errorCodes = map[int]string{
	400: "A query string, parameter or body the endpoint cannot take.",
	401: "Authentication is on and the request carries no valid token or client certificate; WWW-Authenticate: Bearer says how.",
	403: "The Host header names a host not allowed (--allowed-hosts).",
	404: "What the request names is not there: an object the mirror and its history do not know (a uid), or, for a release, controllers (none run here).",
	409: "Nothing is held.",
	415: "The body is not sent as Content-Type: application/json.",
	429: "More requests in flight than --max-requests-inflight; retry after Retry-After.",
	500: "An internal error, logged with the request id.",
	503: "The request was cut by its timeout, or (/readyz) the instance is not ready.",
}

// commonErrors are the error statuses of every route.
var commonErrors = []int{400, 403, 429, 500, 503}

func build() ([]byte, error) {
	roots := []reflect.Type{reflect.TypeFor[api.Error]()}
	for _, op := range operations {
		for _, t := range []reflect.Type{op.body, op.answer} {
			if t != nil {
				roots = append(roots, t)
			}
		}
	}
	defs, err := schemas(roots)
	if err != nil {
		return nil, err
	}
	d := document{
		OpenAPI: "3.1.0",
		Info: map[string]any{
			"title":   "kubegcd",
			"version": Version,
			"description": "What kubegcd knows, read from its local database; no endpoint calls the cluster. " +
				"Answers are JSON, compact (indented for curl and wget); times are RFC 3339 in UTC. " +
				"A query parameter an endpoint does not know, or one given twice that takes one value, is a 400. " +
				"On a loopback --listen the API answers anyone on the machine, without credentials; " +
				"elsewhere a caller sends a bearer token of --auth-token-file or a client certificate that --client-ca-file verifies.",
			"license": map[string]string{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		JSONSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
		Paths:             map[string]map[string]any{},
		Components: components{
			Schemas: defs,
			Responses: map[string]any{"Error": map[string]any{
				"description": "Every answer that is not 2xx: one line saying what went wrong.",
				"content":     jsonContent(ref("Error")),
			}},
			SecuritySchemes: map[string]any{
				"bearerToken": map[string]string{"type": "http", "scheme": "bearer",
					"description": "A token of --auth-token-file: Authorization: Bearer TOKEN."},
				"clientCertificate": map[string]string{"type": "mutualTLS",
					"description": "A client certificate that --client-ca-file verifies, over --tls-cert-file."},
			},
		},
		// The empty requirement: a loopback --listen needs no credentials.
		Security: []map[string][]string{{"bearerToken": {}}, {"clientCertificate": {}}, {}},
	}
	for _, op := range operations {
		item := d.Paths[op.path]
		if item == nil {
			item = map[string]any{}
			d.Paths[op.path] = item
		}
		item[op.method] = operationObject(op)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	// invopop's references point into $defs; here they are components.
	return bytes.ReplaceAll(buf.Bytes(), []byte(`"#/$defs/`), []byte(`"#/components/schemas/`)), nil
}

func ref(name string) map[string]string {
	return map[string]string{"$ref": "#/$defs/" + name}
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func operationObject(op operation) map[string]any {
	o := map[string]any{"summary": op.summary, "operationId": op.method + " " + op.path}
	if op.doc != "" {
		o["description"] = op.doc
	}
	var params []any
	for _, p := range op.params {
		params = append(params, parameterObject(p))
	}
	if params != nil {
		o["parameters"] = params
	}
	if op.body != nil {
		o["requestBody"] = map[string]any{"required": false, "content": jsonContent(ref(op.body.Name()))}
	}
	ok := map[string]any{"description": "OK"}
	switch {
	case op.answer != nil:
		content := jsonContent(ref(op.answer.Name()))
		if op.path == "/graph" {
			content["text/vnd.graphviz"] = map[string]any{"schema": map[string]string{"type": "string"}}
		}
		ok["content"] = content
	case op.path == "/openapi/v3":
		ok["content"] = jsonContent(map[string]any{"type": "object", "description": "An OpenAPI 3.1 document."})
	default: // /healthz and /readyz
		word := map[string]string{"/healthz": "ok", "/readyz": "ready"}[op.path]
		ok["content"] = jsonContent(map[string]any{"type": "object", "additionalProperties": false, "required": []string{"status"},
			"properties": map[string]any{"status": map[string]any{"const": word}}})
	}
	responses := map[string]any{"200": ok}
	codes := append(append([]int{}, commonErrors...), op.errors...)
	if !op.open {
		codes = append(codes, 401)
	}
	sort.Ints(codes)
	for _, c := range codes {
		responses[strconv.Itoa(c)] = map[string]any{"description": errorCodes[c], "content": jsonContent(ref("Error"))}
	}
	o["responses"] = responses
	if op.open {
		o["security"] = []any{}
	}
	return o
}

func parameterObject(p param) map[string]any {
	s := map[string]any{"type": p.typ}
	if p.format != "" {
		s["format"] = p.format
	}
	if p.enum != nil {
		s["enum"] = p.enum
	}
	if p.typ == "integer" {
		s["minimum"], s["maximum"] = p.min, p.max
	}
	if p.def != nil {
		s["default"] = p.def
	}
	if p.pattern != "" {
		s["pattern"] = p.pattern
	}
	if p.repeated {
		s = map[string]any{"type": "array", "items": s}
	}
	o := map[string]any{"name": p.name, "in": p.in, "schema": s}
	if p.doc != "" {
		o["description"] = p.doc
	}
	if p.required {
		o["required"] = true
	}
	if p.repeated {
		o["style"], o["explode"] = "form", true
	}
	return o
}

// Route is one operation of the document: its method, upper case, and
// its path.
type Route struct{ Method, Path string }

// Routes are the document's operations in the order the API lists them.
// The document's paths are a JSON object, which keeps no order; docs that
// walk the document use this one.
func Routes() []Route {
	var rs []Route
	for _, op := range operations {
		rs = append(rs, Route{Method: strings.ToUpper(op.method), Path: op.path})
	}
	return rs
}
