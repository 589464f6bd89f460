-- A Namespace's spec.finalizers and status: what /stuck says holds a
-- namespace being deleted, and what the namespace controller reported.
CREATE TABLE namespaces (
    uid             TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    phase           TEXT NOT NULL DEFAULT '',
    -- JSON array of strings; NULL when there are none
    spec_finalizers TEXT,
    -- JSON array of {type, status, reason, message}; NULL when there are none
    conditions      TEXT
) WITHOUT ROWID;
-- Namespaces mirrored before the table existed are rewritten by the next list
-- (a relist skips rows whose resourceVersion it already has).
UPDATE objects SET resource_version = '' WHERE api_version = 'v1' AND kind = 'Namespace';
