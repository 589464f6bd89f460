package db

// DB is an open kubegcd database. It holds the database's life: Open and
// Close (db.go), what a first Open makes and Discard removes (created.go),
// the schema's migrations (migrate.go), the writer
// (writer.go, checkpoint.go) and the file's health (corrupt.go,
// identity.go, alive.go). Everything else goes through a role. Each kind
// of consumer has its role, whose methods are what that consumer's
// interface declares. Each role lives in the file of its name:
//
//   - Mirror (mirror.go) writes what ingestion sees: the resources watched,
//     lists, watch events and resume points. mirror_extracted.go writes
//     what the cleanup rules read: references, kept labels, typed fields.
//     first_fill.go writes the pages of a list into an empty resource;
//     multirow.go, statements that write several rows each.
//   - Objects (objects.go) reads the objects as the cluster holds them now.
//     Its larger reads have files of their own: graph.go, graph_closure.go,
//     graph_walk.go, detail.go, cascade.go, lookup.go, lint.go, stuck.go,
//     namespaces.go, leases.go and counts.go.
//   - History (history.go, history_at.go) reads the objects' past states.
//     Mirror's writes record them (history_record.go).
//   - Decisions (decisions.go) reads the audit history and the decisions
//     held pending. audit_cursor.go reads the history after a cursor for
//     the audit sinks, and keeps each sink's cursor.
//   - Ledger (ledger.go, intents.go) writes what the applier decides: the
//     decisions held pending, the intents and the audit rows.
//   - OwnerGC, PodGC, TTL, SVGC and LCGC (ownergc.go, podgc.go, ttl.go,
//     svgc.go, lcgc.go) each hold one controller's queries.
//   - Reads is the HTTP API's role: Objects, History, Decisions and Rules
//     together.
//   - Rules (rules.go) writes and reads the cleanup rules' matches, and
//     opens their sandbox (rules_sandbox.go): the views of their contract
//     (rules_views.go), their functions (rules_funcs.go) and the check that
//     a rule is one SELECT (rules_sql.go), and what a rule that deletes
//     reads of its matches (rules_act.go). references.go reads the
//     references around one object for Objects.
//   - Copies (copies.go) keeps the copies of deleted objects that a
//     restore re-creates them from, and the objects restored that a rule
//     spares.
//   - AuditPeers (auditpeers.go) merges the audit rows read from peers,
//     keeps how far each peer was read, who wrote into this database and
//     the gaps a handover left; Decisions serves the rows peers read.
//
// The roles share the rows of types.go. fields.go encodes their columns,
// and stmt.go and snapshot.go run their statements. A role is a value that
// shares the one database, so making one costs nothing. TestRolesHaveFiles
// checks that each role has its file, and that this comment names every
// file of the package.
type DB struct{ *core }

// Mirror is what ingestion writes and reads of the database.
type Mirror struct{ *core }

// Objects reads the objects as the cluster holds them now.
type Objects struct{ *core }

// History reads the objects' past states.
type History struct{ *core }

// Decisions reads the audit history and the decisions held pending.
type Decisions struct{ *core }

// Ledger is what the applier writes: the decisions held pending, the
// intents of writes about to leave, the audit rows that resolve them.
type Ledger struct{ *core }

// OwnerGC is what the owner-reference garbage collector reads; it reads
// objects as Objects does too.
type OwnerGC struct{ Objects }

// PodGC is what PodGC reads: pods and nodes.
type PodGC struct{ *core }

// TTL is what the TTL controller reads: nodes and their annotations.
type TTL struct{ Objects }

// SVGC is what the StorageVersion garbage collector reads: StorageVersions
// and the API servers' identity Leases.
type SVGC struct{ Objects }

// LCGC is what the LeaseCandidate collector reads: the LeaseCandidates
// whose renewal has run out.
type LCGC struct{ Objects }

// Reads is every read the HTTP API makes: Objects, History, Decisions,
// the rules' matches of Rules, and the deleted objects' copies of Copies.
type Reads struct {
	Objects
	History
	Decisions
	Rules
	Copies
}

// Mirror is ingestion's role.
func (d *DB) Mirror() Mirror { return Mirror{d.core} }

// Objects is the role that reads the objects as they are now.
func (d *DB) Objects() Objects { return Objects{d.core} }

// History is the role that reads the objects' past.
func (d *DB) History() History { return History{d.core} }

// Decisions is the role that reads the audit history and what is pending.
func (d *DB) Decisions() Decisions { return Decisions{d.core} }

// Ledger is the applier's role.
func (d *DB) Ledger() Ledger { return Ledger{d.core} }

// OwnerGC is the owner-reference garbage collector's role.
func (d *DB) OwnerGC() OwnerGC { return OwnerGC{Objects{d.core}} }

// PodGC is PodGC's role.
func (d *DB) PodGC() PodGC { return PodGC{d.core} }

// TTL is the TTL controller's role.
func (d *DB) TTL() TTL { return TTL{Objects{d.core}} }

// SVGC is the StorageVersion garbage collector's role.
func (d *DB) SVGC() SVGC { return SVGC{Objects{d.core}} }

// LCGC is the LeaseCandidate collector's role.
func (d *DB) LCGC() LCGC { return LCGC{Objects{d.core}} }

// Reads is the HTTP API's role.
func (d *DB) Reads() Reads {
	return Reads{Objects{d.core}, History{d.core}, Decisions{d.core}, Rules{d.core}, Copies{d.core}}
}

// Rules is what the cleanup rules read and write: their sandbox
// (OpenSandbox) and the matches of their passes.
type Rules struct{ *core }

// Rules is the cleanup rules' role.
func (d *DB) Rules() Rules { return Rules{d.core} }

// Copies keeps the copies of the objects kubegcd deleted, and what
// restores record: which object a copy became, which rule spares it.
type Copies struct{ *core }

// Copies is the role of the deleted objects' copies.
func (d *DB) Copies() Copies { return Copies{d.core} }
