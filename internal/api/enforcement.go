package api

// ReleaseRequest is the body of POST /enforcement/release, which ends a
// manual hold of the blast-radius cap. It is sent as application/json;
// an empty body is a release without a reason.
type ReleaseRequest struct {
	// Why the operator releases, for the audit history; at most 1000 bytes once
	// trimmed of white space.
	Reason string `json:"reason"`
}

// ReleaseResult is the answer of a release made.
type ReleaseResult struct {
	// Always "released": the hold has ended.
	Status string `json:"status"`
}

// StatusReleased is ReleaseResult's Status.
const StatusReleased = "released"
