// Package diagnose answers operators' questions from the mirror alone —
// what holds a deletion, what a delete would take with it, what is wrong
// with ownerReferences: read-only analysis of what internal/db reads, pure
// functions of query results, table-tested without a cluster.
package diagnose
