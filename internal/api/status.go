package api

import "time"

// Status is the answer of GET /status: what this instance mirrors, what
// it enforces and how its controllers and leader election fare.
type Status struct {
	// The version of kubegcd.
	Version string `json:"version"`
	// When this instance started.
	StartedAt time.Time `json:"startedAt"`
	// True when every watched resource has listed once, so the mirror holds the
	// cluster.
	Synced bool `json:"synced"`
	// The applier's state; absent where no controller runs.
	Enforcement *EnforcementStatus `json:"enforcement,omitempty"`
	// True when this instance writes to the cluster.
	Leader bool `json:"leader"`
	// This instance's part in leader election: its identity, the Lease, its
	// holder and since when, and whether the API server names the holder among
	// which candidates.
	LeaderElection *LeaderStatus `json:"leaderElection,omitempty"`
	// The number of objects mirrored, of every resource.
	Objects int64 `json:"objects"`
	// The resources watched.
	Resources []ResourceStatus `json:"resources"`
	// The error of each API group/version whose discovery fails, such as an
	// aggregated API whose server is down. Their resources are not watched
	// anew. Owners of their kinds cannot be resolved, and are never taken for
	// absent. Absent when none fails.
	DiscoveryFailures map[string]string `json:"discoveryFailures,omitempty"`
	// How the API knows its callers: "token", "client-certificate", both, or
	// "none".
	Authentication string `json:"authentication"`
	// True when the API serves a non-loopback address to anyone, as
	// --insecure-allow-unauthenticated allowed. Absent when not.
	InsecureUnauthenticated bool `json:"insecureUnauthenticated,omitempty"`
	// The state of --auth-token-file: the tokens in use, the lines skipped, and
	// why every token is refused when it is. Absent without --auth-token-file.
	AuthTokenFile *TokenFileStatus `json:"authTokenFile,omitempty"`

	// The controllers that run here, one entry each.
	Controllers []ControllerStatus `json:"controllers"`
	// The peers this instance reads audit rows from, and the gaps in its
	// history; absent when it shares none.
	AuditPeers *AuditPeersStatus `json:"auditPeers,omitempty"`
}

// ResourceStatus is one watched resource.
type ResourceStatus struct {
	// The resource's API group; empty for the core group.
	Group string `json:"group"`
	// The API version the resource is watched at.
	Version string `json:"version"`
	// The resource's plural name, as the API serves it.
	Resource string `json:"resource"`
	// The kind of the resource's objects.
	Kind string `json:"kind"`
	// True when the resource's objects live in namespaces.
	Namespaced bool `json:"namespaced"`
	// True when the resource's mirror is live. The resource is listed (or,
	// after a restart, caught up from the stored resourceVersion) and its watch
	// is up.
	Synced bool `json:"synced"`
	// The number of the resource's objects in the mirror.
	Objects int64 `json:"objects"`
}

// EnforcementStatus is the applier's state: dry-run, the audit store and
// the blast-radius cap.
type EnforcementStatus struct {
	// True when decisions are recorded, never sent to the cluster.
	DryRun bool `json:"dryRun"`
	// True when no write is sent until the causes in pausedBy end.
	Paused bool `json:"paused"`
	// Each cause of the pause: audit-store (the audit history cannot be
	// written) or blast-radius (the cap was reached). Absent when not paused.
	PausedBy []string `json:"pausedBy,omitempty"`
	// When the pause began; absent when not paused.
	PausedSince *time.Time `json:"pausedSince,omitempty"`
	// Why enforcement paused, in words; absent when not paused.
	PausedReason string `json:"pausedReason,omitempty"`
	// The blast-radius cap. It caps every write, deletes and patches alike.
	MaxDeletionsPerMinute int `json:"maxDeletionsPerMinute"`
	// The number of writes of the last minute.
	WritesLastMinute int `json:"writesLastMinute"`
	// How a pause by the cap ends: "auto", or "manual" (POST
	// /enforcement/release).
	BlastRadiusResume BlastRadiusResume `json:"blastRadiusResume"`
	// The number of audit rows of writes already made that wait in memory for
	// the database to take them. Absent when 0.
	AuditBacklog int `json:"auditBacklog,omitempty"`
}

// BlastRadiusResume is how a pause by the blast-radius cap ends, as
// --blast-radius-resume says.
type BlastRadiusResume string

// How a pause by the blast-radius cap ends.
const (
	// BlastRadiusResumeAuto: enforcement resumes once the rate falls.
	BlastRadiusResumeAuto BlastRadiusResume = "auto"
	// BlastRadiusResumeManual: enforcement waits for a release.
	BlastRadiusResumeManual BlastRadiusResume = "manual"
)

// BlastRadiusResumes lists how a pause by the cap may end.
var BlastRadiusResumes = []BlastRadiusResume{BlastRadiusResumeAuto, BlastRadiusResumeManual}

// ControllerStatus is one running controller: when it last made a pass,
// whether it is skipping them (a resource it reads is not live) and why,
// and, for a controller that works from a queue, how deep the queue is and
// when it last finished an item.
type ControllerStatus struct {
	// The controller's name.
	Name Controller `json:"name"`
	// When the last pass made started; null before the first. A pass is podgc's
	// periodic pass, ttl's reconcile of every node, ownergc's full pass over
	// the candidates the mirror shows (a resync), svgc's scan of the mirror,
	// lcgc's pass over the expired LeaseCandidates.
	LastPass *time.Time `json:"lastPass"`
	// True when the controller skips its passes, as a resource it reads is not
	// live.
	Skipping bool `json:"skipping"`
	// Why the controller skips, in a word: mirror-not-synced. Absent while it
	// does not skip.
	SkipReason string `json:"skipReason,omitempty"`
	// Why the controller skips, in a sentence. Absent while it does not skip.
	SkipDetail string `json:"skipDetail,omitempty"`
	// When the controller began to skip. Absent while it does not skip.
	SkippingSince *time.Time `json:"skippingSince,omitempty"`
	// The number of passes skipped since start.
	SkippedPasses int64 `json:"skippedPasses"`
	// When the controller last finished an item of its queue (ownergc, svgc);
	// absent before the first and for a controller without a queue.
	LastWork *time.Time `json:"lastWork,omitempty"`
	// How many items wait in the controller's queues (ownergc, svgc); absent
	// for a controller without a queue.
	QueueDepth *int `json:"queueDepth,omitempty"`
}

// LeaderStatus is this instance's part in leader election.
type LeaderStatus struct {
	// False when --leader-elect=false or in dry-run, which writes nothing, a
	// Lease included.
	Enabled bool `json:"enabled"`
	// Which of the two disabled the election; absent when enabled.
	Reason string `json:"reason,omitempty"`
	// True when this instance writes to the cluster.
	Leader bool `json:"leader"`
	// This instance's identity in the election.
	Identity string `json:"identity"`
	// The Lease of the election, namespace/name.
	Lease string `json:"lease,omitempty"`
	// The identity holding the lease; absent when none does.
	Holder string `json:"holder,omitempty"`
	// When the holder acquired the lease.
	HolderSince *time.Time `json:"holderSince,omitempty"`
	// True when the API server's election controller names the holder among the
	// Lease's LeaseCandidates (--leader-elect-coordinated). Absent when not.
	Coordinated bool `json:"coordinated,omitempty"`
	// The Lease's spec.strategy, as the mirror holds it: the way the API server
	// picks the holder. Absent when unset.
	Strategy string `json:"strategy,omitempty"`
	// The Lease's spec.preferredHolder, as the mirror holds it: the candidate
	// the API server wants to hold the Lease once the holder gives it up.
	// Absent when unset.
	PreferredHolder string `json:"preferredHolder,omitempty"`
	// The LeaseCandidates that stand for the Lease, as the mirror holds them,
	// by name. Absent when none does.
	Candidates []ElectionCandidate `json:"candidates,omitempty"`
}

// ElectionCandidate is a LeaseCandidate that stands for kubegcd's Lease:
// a kubegcd instance under --leader-elect-coordinated.
type ElectionCandidate struct {
	// The candidate's name, the identity of its instance.
	Name string `json:"name"`
	// The spec's binaryVersion: the instance's version.
	BinaryVersion string `json:"binaryVersion"`
	// The spec's emulationVersion, the version the election compares first.
	EmulationVersion string `json:"emulationVersion"`
	// The spec's strategy, the one the candidate asks for.
	Strategy string `json:"strategy"`
	// When the candidate last renewed; null where unset.
	RenewTime *time.Time `json:"renewTime"`
	// When the election last asked the candidate to renew; absent where unset.
	PingTime *time.Time `json:"pingTime,omitempty"`
	// True when the candidate is this instance's own.
	Self bool `json:"self,omitempty"`
}

// TokenFileStatus is --auth-token-file as /status shows it.
type TokenFileStatus struct {
	// The number of valid tokens in use.
	Tokens int `json:"tokens"`
	// The numbers of the lines skipped as malformed.
	SkippedLines []int `json:"skippedLines,omitempty"`
	// Why every token is refused: the file cannot be read or holds no valid
	// token. Absent while a token is valid.
	Error string `json:"error,omitempty"`
	// When every token began to be refused; absent when error is.
	Since *time.Time `json:"since,omitempty"`
}
