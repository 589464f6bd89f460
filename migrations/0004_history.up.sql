-- The lifecycle of every object, kept after it is gone: one row each time
-- kubegcd saw it appear, change its ownerReferences, finalizers or
-- deletionTimestamp, or go, and each change of a Lease's holder. Other
-- changes (most resourceVersions, lease renewals) write nothing. Each row
-- holds the full state after the change.
CREATE TABLE object_history (
    id                 INTEGER PRIMARY KEY,
    uid                TEXT NOT NULL,
    -- when kubegcd saw the change
    time               TEXT NOT NULL,
    -- created, owners-changed, finalizers-changed, deletion-requested, deleted,
    -- holder-changed (Leases)
    event              TEXT NOT NULL,
    api_version        TEXT NOT NULL,
    kind               TEXT NOT NULL,
    namespace          TEXT NOT NULL DEFAULT '',
    name               TEXT NOT NULL,
    -- JSON arrays, NULL when empty, as in objects
    owner_refs         TEXT,
    finalizers         TEXT,
    deletion_timestamp TEXT,
    -- Leases only: spec.holderIdentity ('' when none) on every row; on a
    -- created or holder-changed row, since when that holder held it
    -- (acquireTime, or renewTime when it renewed a lapsed lease) and, when
    -- a watch saw the lease run out first, when it did (the previous
    -- renewTime + leaseDurationSeconds).
    holder             TEXT,
    holder_since       TEXT,
    lapsed_at          TEXT
);
CREATE INDEX object_history_by_uid ON object_history (uid, id);
CREATE INDEX object_history_by_time ON object_history (time);

-- Every (owner, dependent) pair a history row ever named, so that the
-- dependents an owner had at a past time are found without reading every
-- row's JSON.
CREATE TABLE history_owner_refs (
    owner_uid     TEXT NOT NULL,
    dependent_uid TEXT NOT NULL,
    PRIMARY KEY (owner_uid, dependent_uid)
) WITHOUT ROWID;

-- Objects mirrored before history existed are rewritten by the next list
-- (which skips rows whose resourceVersion it already has), so every object
-- gets its first row.
UPDATE objects SET resource_version = '';
