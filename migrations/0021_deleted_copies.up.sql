-- A copy of an object kubegcd deleted, kept so that an operator can
-- restore it (kubegcd restore). The rules' deletions keep one, and the
-- collectors' that --deleted-copies-for names. body is the object as JSON,
-- gzip-compressed; size is its length. A Secret's data is left out unless
-- --keep-deleted-secrets (secret_data_dropped says so). restored_uid is
-- the UID of the object a restore made from the copy, '' until then.
CREATE TABLE deleted_copies (
    uid                 TEXT    PRIMARY KEY,
    api_version         TEXT    NOT NULL,
    kind                TEXT    NOT NULL,
    resource            TEXT    NOT NULL,
    namespace           TEXT    NOT NULL DEFAULT '',
    name                TEXT    NOT NULL,
    controller          TEXT    NOT NULL,
    rule_id             TEXT    NOT NULL DEFAULT '',
    rule_hash           TEXT    NOT NULL DEFAULT '',
    taken_at            TEXT    NOT NULL,
    secret_data_dropped INTEGER NOT NULL DEFAULT 0,
    size                INTEGER NOT NULL,
    restored_uid        TEXT    NOT NULL DEFAULT '',
    restored_at         TEXT,
    restored_by         TEXT    NOT NULL DEFAULT '',
    -- Last, so that a read of the other columns stops before it.
    body                BLOB    NOT NULL
);
CREATE INDEX deleted_copies_by_kind ON deleted_copies (kind COLLATE NOCASE, namespace, name);
CREATE INDEX deleted_copies_by_resource ON deleted_copies (resource, namespace, name);
CREATE INDEX deleted_copies_by_taken ON deleted_copies (taken_at);
CREATE INDEX deleted_copies_by_restored ON deleted_copies (restored_uid) WHERE restored_uid <> '';

-- An object restored from the copy of one a rule deleted: the rule leaves
-- it alone while its text hashes to rule_hash. deleted_uid is the copy's.
CREATE TABLE rule_spared (
    rule_id     TEXT NOT NULL,
    uid         TEXT NOT NULL,
    rule_hash   TEXT NOT NULL,
    deleted_uid TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (rule_id, uid)
) WITHOUT ROWID;
CREATE INDEX rule_spared_by_uid ON rule_spared (uid);
