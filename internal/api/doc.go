// Package api is the contract of kubegcd's HTTP API: the vocabulary its
// answers use (controllers, actions, outcomes), the types of every request
// and answer, and what each field means. The server (internal/http) maps
// the database's rows and the diagnoses to these types in one place per
// endpoint; the CLI (internal/cli) and users' own clients decode them.
//
// It imports nothing of kubegcd: a storage row can change without the API
// changing, and the other way round.
package api
