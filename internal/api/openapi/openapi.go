// Package openapi builds the OpenAPI 3.1 document of kubegcd's HTTP API:
// its paths and parameters from api.Operations, its schemas reflected from
// the types of package api with their doc comments. hack/gendocs builds it
// at make docs into docs/openapi.json, which the server embeds and serves;
// nothing builds it at run time.
package openapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"

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
	Webhooks          map[string]map[string]any `json:"webhooks"`
	Components        components                `json:"components"`
	Security          []map[string][]string     `json:"security"`
}

type components struct {
	Schemas         map[string]*jsonschema.Schema `json:"schemas"`
	Responses       map[string]any                `json:"responses"`
	SecuritySchemes map[string]any                `json:"securitySchemes"`
}

// Build is the document, indented, with a final newline. Its schemas'
// descriptions are the doc comments of package api's source in apiDir.
func Build(apiDir string) ([]byte, error) {
	comments, err := goComments(apiDir)
	if err != nil {
		return nil, err
	}
	return build(comments)
}

// errorCodes say when the server answers each error status.
var errorCodes = map[int]string{
	400: "A query string, parameter or body the endpoint cannot take.",
	401: "Authentication is on and the request carries no valid token or client certificate; " +
		"WWW-Authenticate: Bearer says how.",
	403: "The Host header names a host not allowed (--allowed-hosts), or (POST /rules/evaluate, " +
		"POST /objects/{uid}/restore) the API has no authentication and does not listen on loopback.",
	404: "What the request names is not there: an object the mirror and its history do not know (a uid), " +
		"a rule that is not loaded, a copy of a deleted object not kept here, " +
		"or, for a release, controllers (none run here).",
	409: "Nothing is held (a release), or the restore is refused, for the reason the error gives.",
	413: "The body is larger than the endpoint takes.",
	415: "The body is not sent with a Content-Type the endpoint takes: application/json, " +
		"or for POST /rules/evaluate also YAML.",
	429: "More requests in flight than --max-requests-inflight; retry after Retry-After.",
	500: "An internal error, logged with the request id.",
	503: "The request was cut by its timeout, or (/readyz) the instance is not ready.",
}

func build(comments map[string]string) ([]byte, error) {
	roots := []reflect.Type{reflect.TypeFor[api.Error](), reflect.TypeFor[api.AuditBatch]()}
	for _, op := range listed() {
		for _, t := range []reflect.Type{op.Body, op.Answer} {
			if t != nil {
				roots = append(roots, t)
			}
		}
	}
	defs, err := schemas(roots, comments)
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
				"elsewhere a caller sends a bearer token of --auth-token-file " +
				"or a client certificate that --client-ca-file verifies.",
			"license": map[string]string{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		JSONSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
		Paths:             map[string]map[string]any{},
		Webhooks:          map[string]map[string]any{"auditBatch": {"post": auditWebhook()}},
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
	for _, op := range listed() {
		item := d.Paths[op.Path]
		if item == nil {
			item = map[string]any{}
			d.Paths[op.Path] = item
		}
		item[strings.ToLower(op.Method)] = operationObject(op)
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

// auditWebhook is what kubegcd posts to --audit-webhook-config-file's
// receiver.
func auditWebhook() map[string]any {
	return map[string]any{
		"summary":     "Audit rows, posted to the receiver of --audit-webhook-config-file",
		"operationId": "post auditBatch",
		"description": "The audit rows kubegcd writes, oldest first, in batches of at most " +
			"--audit-webhook-batch-max-size. Each item is the row as GET /audit lists it. " +
			"Any 2xx accepts the batch. No connection, no answer within 30 s, a 5xx, 401, 403, 408 or 429 " +
			"is retried after a back-off; any other 4xx drops the batch, counted in " +
			"kubegcd_audit_sink_rows_dropped_total{reason=\"rejected\"}.",
		"requestBody": map[string]any{"required": true, "content": jsonContent(ref("AuditBatch"))},
		"responses":   map[string]any{"2XX": map[string]any{"description": "The batch is accepted."}},
	}
}

func ref(name string) map[string]string {
	return map[string]string{"$ref": "#/$defs/" + name}
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// listed are the operations of the document: api.Operations but those
// whose answers are not JSON.
func listed() []api.Operation {
	var ops []api.Operation
	for _, op := range api.Operations {
		if !op.Unlisted {
			ops = append(ops, op)
		}
	}
	return ops
}

func operationObject(op api.Operation) map[string]any {
	o := map[string]any{"summary": op.Summary, "operationId": strings.ToLower(op.Method) + " " + op.Path}
	if op.Description != "" {
		o["description"] = op.Description
	}
	var params []any
	for _, p := range op.Params {
		params = append(params, parameterObject(p))
	}
	if params != nil {
		o["parameters"] = params
	}
	if op.Body != nil {
		content := jsonContent(ref(op.Body.Name()))
		for _, mt := range op.BodyMediaTypes {
			content[mt] = map[string]any{"schema": ref(op.Body.Name())}
		}
		o["requestBody"] = map[string]any{"required": false, "content": content}
	}
	ok := map[string]any{"description": http.StatusText(op.SuccessStatus())}
	if op.Answer != nil {
		ok["content"] = jsonContent(ref(op.Answer.Name()))
	} else {
		ok["content"] = jsonContent(op.AnswerSchema)
	}
	if op.AnswerText != "" {
		ok["content"].(map[string]any)[op.AnswerText] = map[string]any{"schema": map[string]string{"type": "string"}}
	}
	responses := map[string]any{strconv.Itoa(op.SuccessStatus()): ok}
	for _, c := range op.Statuses() {
		if c == op.SuccessStatus() {
			continue
		}
		responses[strconv.Itoa(c)] = map[string]any{"description": errorCodes[c], "content": jsonContent(ref("Error"))}
	}
	o["responses"] = responses
	if op.Open {
		o["security"] = []any{}
	}
	return o
}

func parameterObject(p api.Param) map[string]any {
	s := map[string]any{"type": p.Type}
	if p.Format != "" {
		s["format"] = p.Format
	}
	if p.Enum != nil {
		s["enum"] = p.Enum
	}
	if p.Type == "integer" {
		s["minimum"], s["maximum"] = p.Min, p.Max
	}
	if p.Default != nil {
		s["default"] = p.Default
	}
	if p.Pattern != "" {
		s["pattern"] = p.Pattern
	}
	if p.Repeated {
		s = map[string]any{"type": "array", "items": s}
	}
	o := map[string]any{"name": p.Name, "in": p.In, "schema": s}
	if p.Description != "" {
		o["description"] = p.Description
	}
	if p.Required {
		o["required"] = true
	}
	if p.Repeated {
		o["style"], o["explode"] = "form", true
	}
	return o
}
