-- One row per decision a controller made, applied or (dry-run) not.
CREATE TABLE audit (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    time        TEXT    NOT NULL,
    instance    TEXT    NOT NULL,
    controller  TEXT    NOT NULL,
    rule        TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    api_version TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    namespace   TEXT    NOT NULL DEFAULT '',
    name        TEXT    NOT NULL,
    uid         TEXT    NOT NULL,
    -- JSON: what the decision rested on (each ownerReference's classification …)
    facts       TEXT,
    reason      TEXT    NOT NULL DEFAULT '',
    dry_run     INTEGER NOT NULL,
    -- applied, failed, conflict, not-found, skipped
    outcome     TEXT    NOT NULL,
    error       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_by_time ON audit (time);
CREATE INDEX audit_by_uid ON audit (uid, id);
CREATE INDEX audit_by_controller ON audit (controller, id);
CREATE INDEX audit_by_namespace ON audit (namespace, id);

-- What each controller would do next. A row stays while the decision holds:
-- in dry-run until the cluster changes, in enforce until it is applied.
CREATE TABLE pending (
    controller  TEXT NOT NULL,
    uid         TEXT NOT NULL,
    action      TEXT NOT NULL,
    rule        TEXT NOT NULL,
    reason      TEXT NOT NULL,
    api_version TEXT NOT NULL,
    kind        TEXT NOT NULL,
    namespace   TEXT NOT NULL DEFAULT '',
    name        TEXT NOT NULL,
    -- the object's resourceVersion when decided: a dry-run decision is audited
    -- once per version, not once per pass
    resource_version TEXT NOT NULL DEFAULT '',
    since       TEXT NOT NULL,
    PRIMARY KEY (controller, uid, action)
) WITHOUT ROWID;
CREATE INDEX pending_by_namespace ON pending (namespace);
