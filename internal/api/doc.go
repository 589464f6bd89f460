// Package api is the contract of kubegcd's HTTP API: the vocabulary its
// answers use (controllers, actions, outcomes), the table of its operations
// with their parameters and limits, the types of every request and answer,
// and what each field means. The server (internal/http) routes the
// operations and maps the database's rows and the diagnoses to these types
// in one place per endpoint; the CLI (internal/cli) and users' own clients
// decode them. hack/gendocs builds the OpenAPI document from the table and
// the types' doc comments, so each field's comment is written to stand
// alone as its description.
//
// It imports nothing of kubegcd: a storage row can change without the API
// changing, and the other way round.
package api
