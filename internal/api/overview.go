package api

import "time"

// Overview is the answer of GET /overview: what the UI's overview needs
// beside /status that no other endpoint gives cheaply, counts rather than
// rows.
type Overview struct {
	// The number of /pending's rows of each controller; every controller is
	// listed, 0 when it holds nothing.
	PendingByController map[Controller]int `json:"pendingByController"`
	// The controllers' deletions over time.
	Deletions Deletions `json:"deletions"`
}

// Deletions are the controllers' deletions over the last hour, per minute,
// and the last day, per hour, oldest bucket first; the newest bucket is
// the current, unfinished one.
type Deletions struct {
	// The last hour's 60 buckets of a minute.
	LastHour []DeletionBucket `json:"lastHour"`
	// The last day's 24 buckets of an hour.
	LastDay []DeletionBucket `json:"lastDay"`
}

// DeletionBucket counts the deletions of one span of time.
type DeletionBucket struct {
	// When the span starts; it lasts until the next bucket starts.
	Start time.Time `json:"start"`
	// The number of the controllers' deletes sent to the cluster.
	Applied int `json:"applied"`
	// The number of deletes decided in dry-run, only recorded.
	DryRun int `json:"dryRun"`
}
