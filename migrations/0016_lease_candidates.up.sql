-- Coordinated leader election (coordination.k8s.io). A Lease gains the
-- strategy the election follows and the holder its controller prefers.
-- A LeaseCandidate stands for one component in the election of one Lease:
-- its versions, the strategy it asks for, and when it was last pinged and
-- last renewed. The lease-candidate collector finds the expired ones by
-- renew_time, hence the index.
ALTER TABLE leases ADD COLUMN strategy TEXT;
ALTER TABLE leases ADD COLUMN preferred_holder TEXT;

CREATE TABLE lease_candidates (
    uid               TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    lease_name        TEXT NOT NULL,
    binary_version    TEXT NOT NULL DEFAULT '',
    emulation_version TEXT NOT NULL DEFAULT '',
    strategy          TEXT NOT NULL DEFAULT '',
    ping_time         TEXT,
    renew_time        TEXT
) WITHOUT ROWID;

CREATE INDEX lease_candidates_renew_time ON lease_candidates (renew_time);
