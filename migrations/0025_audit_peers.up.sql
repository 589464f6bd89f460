-- Peers share their audit rows. A row merged from a peer keeps the
-- identity of the instance that wrote it and its id in that instance's
-- database, origin_id. A row this database's own instances wrote has
-- origin_id NULL: its origin is its own id. So (instance, origin) names a
-- row in every copy, and a row merged twice is one row.
ALTER TABLE audit ADD COLUMN origin_id INTEGER;
CREATE UNIQUE INDEX audit_by_origin ON audit (instance, coalesce(origin_id, id));

-- This database's name among the copies: a peer's cursor is kept by it,
-- so that a peer restarted under a new identity on the same file resumes
-- where it was.
CREATE TABLE audit_store (
    id TEXT NOT NULL
);
INSERT INTO audit_store (id) VALUES (lower(hex(randomblob(16))));

-- The identities that wrote rows into this database themselves: one row
-- per start of the daemon. A gap in another instance's history closes when
-- the database that identity wrote into has been read to its end.
CREATE TABLE audit_writers (
    instance TEXT PRIMARY KEY,
    since    TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO audit_writers (instance, since) SELECT instance, min(time) FROM audit GROUP BY instance;

-- How far this instance has read each peer's database: the peer's local
-- id of the last row taken.
CREATE TABLE audit_peer_cursors (
    store     TEXT PRIMARY KEY,
    after_id  INTEGER NOT NULL,
    url       TEXT NOT NULL DEFAULT '',
    instance  TEXT NOT NULL DEFAULT '',
    pulled_at TEXT NOT NULL
) WITHOUT ROWID;

-- The history of an instance that may be missing rows: a new leader could
-- not read the old leader's rows before its first write. The marker goes
-- once the old leader's database has been read to its end.
CREATE TABLE audit_gaps (
    instance    TEXT PRIMARY KEY,
    -- the newest row of that instance held when the gap was recorded; NULL
    -- when none was
    since       TEXT,
    -- when the new leader took over: rows of the instance before it may be
    -- missing
    before      TEXT NOT NULL,
    recorded_by TEXT NOT NULL
) WITHOUT ROWID;
