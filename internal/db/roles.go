package db

// DB is an open kubegcd database. It holds the database's life (Open,
// Close, the writer, the file's health); what is read and written goes
// through a role, one for each kind of consumer, whose methods are what
// that consumer's interface declares:
//
//   - Mirror: ingestion's writes (the resources watched, lists, watch
//     events, resume points);
//   - Objects: the objects as the cluster holds them now (the graph,
//     lookups, cascades, lint, stuck deletions, Leases, counts);
//   - History: the objects' past states;
//   - Decisions: the audit history and the decisions held pending, read;
//   - Ledger: the applier's writes (pending decisions, intents, audit rows);
//   - OwnerGC, PodGC, TTL, SVGC and LCGC: each controller's queries.
//
// A role is a value that shares the one database: making one costs
// nothing.
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

// Reads is every read the HTTP API makes: Objects, History and Decisions.
type Reads struct {
	Objects
	History
	Decisions
}

// Reads is the HTTP API's role.
func (d *DB) Reads() Reads { return Reads{Objects{d.core}, History{d.core}, Decisions{d.core}} }
