package api

import "time"

// Overview is the answer of GET /overview: what the UI's overview needs
// beside /status that no other endpoint gives cheaply, counts rather than
// rows.
type Overview struct {
	// PendingByController counts /pending's rows of each controller;
	// every controller is listed, 0 when it holds nothing.
	PendingByController map[string]int `json:"pendingByController"`
	// Deletions are the controllers' deletions over time.
	Deletions Deletions `json:"deletions"`
}

// Deletions are the controllers' deletions over the last hour, per minute,
// and the last day, per hour, oldest bucket first; the newest bucket is
// the current, unfinished one.
type Deletions struct {
	// LastHour has 60 buckets of a minute.
	LastHour []DeletionBucket `json:"lastHour"`
	// LastDay has 24 buckets of an hour.
	LastDay []DeletionBucket `json:"lastDay"`
}

// DeletionBucket counts the deletions of one span of time.
type DeletionBucket struct {
	// Start is when the span starts; it lasts until the next bucket's.
	Start time.Time `json:"start"`
	// Applied counts the controllers' deletes sent to the cluster.
	Applied int `json:"applied"`
	// DryRun counts the deletes decided in dry-run, only recorded.
	DryRun int `json:"dryRun"`
}
