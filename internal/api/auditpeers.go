package api

import "time"

// AuditReplicaEntry is an audit row as a peer reads it from GET
// /audit/replicate: the row with its origin.
type AuditReplicaEntry struct {
	AuditEntry
	// The row's id in the database of the instance that wrote it. With
	// instance it names the row in every copy; it equals id for the rows
	// this instance's database wrote itself.
	OriginID int64 `json:"originId"`
}

// AuditReplicaPage is the answer of GET /audit/replicate: rows in local id
// order, those this instance merged from its own peers included.
type AuditReplicaPage struct {
	// The rows after the cursor, oldest first; [] when none.
	Items []AuditReplicaEntry `json:"items"`
	// The id of this instance's database among the copies. A reader keeps
	// its cursor by it, so a restart under a new identity resumes.
	Store string `json:"store"`
	// The identity of the instance that answers.
	Instance string `json:"instance"`
	// The identities that wrote rows into this database themselves: this
	// instance and the earlier runs on the same file.
	Writers []string `json:"writers"`
	// The local id of this database's newest row; 0 when it holds none.
	Head int64 `json:"head"`
	// The time of the newest row; absent when it holds none.
	HeadTime *time.Time `json:"headTime,omitempty"`
}

// AuditGap is a part of another instance's history that this instance
// may be missing: when it took the Lease over, the old leader did not
// answer in time.
type AuditGap struct {
	// The identity of the instance whose rows may be missing.
	Instance string `json:"instance"`
	// The time of the newest row of that instance held when the gap was
	// recorded; absent when none was held.
	Since *time.Time `json:"since,omitempty"`
	// Rows of that instance before this time may be missing.
	Before time.Time `json:"before"`
	// The identity of the instance that recorded the gap.
	RecordedBy string `json:"recordedBy"`
	// The gap in a sentence.
	Message string `json:"message"`
}

// AuditPeerStatus is one peer this instance reads audit rows from.
type AuditPeerStatus struct {
	// The peer's API URL.
	URL string `json:"url"`
	// Where the URL came from: "flag" (--audit-peers) or "cluster" (an
	// instance's advertisement).
	Source string `json:"source"`
	// The peer's identity, as it last answered or advertised it.
	Instance string `json:"instance,omitempty"`
	// The id of the peer's database, as it last answered.
	Store string `json:"store,omitempty"`
	// When a read of the peer last succeeded; absent before the first.
	LastPull *time.Time `json:"lastPull,omitempty"`
	// The rows the peer held at the last read that this instance has yet
	// to take.
	BehindRows int64 `json:"behindRows"`
	// The time between the peer's newest row and the newest row taken from
	// it, in seconds.
	BehindSeconds float64 `json:"behindSeconds"`
	// Why the last read failed; absent when it succeeded.
	LastError string `json:"lastError,omitempty"`
	// When the reads began to fail; absent when the last succeeded.
	FailingSince *time.Time `json:"failingSince,omitempty"`
	// When the next read is due, after a back-off; absent when it is not
	// held back.
	NextTry *time.Time `json:"nextTry,omitempty"`
}

// AuditPeersStatus is audit sharing as /status shows it.
type AuditPeersStatus struct {
	// The URL this instance advertises to its peers; absent when none.
	AdvertiseURL string `json:"advertiseURL,omitempty"`
	// The peers, by URL; [] when none is known.
	Peers []AuditPeerStatus `json:"peers"`
	// The parts of other instances' histories this instance may be
	// missing; absent when none.
	Gaps []AuditGap `json:"gaps,omitempty"`
}
