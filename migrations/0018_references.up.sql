-- What references what, for the cleanup rules. Ingestion extracts these
-- facts from the referrers' specs and drops the bodies. Nothing here is
-- an object body or Secret data.

-- One row for each reference from a referrer to a target, by the target's
-- kind, namespace and name. The target need not exist: a dangling
-- reference is kept, so a rule can report it.
CREATE TABLE refs (
    referrer_uid     TEXT    NOT NULL REFERENCES objects (uid) ON DELETE CASCADE,
    -- the target's API group: '' for the core group
    target_group     TEXT    NOT NULL,
    target_kind      TEXT    NOT NULL,
    -- '' for a cluster-scoped target
    target_namespace TEXT    NOT NULL DEFAULT '',
    target_name      TEXT    NOT NULL,
    -- the field the reference came from, such as
    -- spec.template.spec.volumes[].configMap
    via              TEXT    NOT NULL,
    -- 1 when the referrer works without the target (optional: true)
    optional         INTEGER NOT NULL DEFAULT 0,
    -- 1 when target_name is a prefix that an ordinal completes: the claims
    -- of a StatefulSet's volumeClaimTemplates, <template>-<set>-<ordinal>
    prefix           INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (referrer_uid, target_group, target_kind, target_namespace, target_name, via)
) WITHOUT ROWID;
CREATE INDEX refs_by_target ON refs (target_kind, target_namespace, target_name);

-- When each target was first and last referenced, kept after its
-- referrers are gone. last_referenced is when kubegcd last saw a reference
-- to it appear or go; while a reference exists, the target is referenced
-- now. Triggers keep it, so every path that removes a reference (an
-- update, a deletion, a relist's sweep) counts. Times have the format of
-- the other tables (microseconds, UTC), so they sort as text.
CREATE TABLE ref_history (
    target_group     TEXT    NOT NULL,
    target_kind      TEXT    NOT NULL,
    target_namespace TEXT    NOT NULL DEFAULT '',
    target_name      TEXT    NOT NULL,
    prefix           INTEGER NOT NULL DEFAULT 0,
    first_referenced TEXT    NOT NULL,
    last_referenced  TEXT    NOT NULL,
    PRIMARY KEY (target_kind, target_namespace, target_name, target_group, prefix)
) WITHOUT ROWID;

CREATE TRIGGER refs_added AFTER INSERT ON refs BEGIN
    INSERT INTO ref_history (target_group, target_kind, target_namespace, target_name, prefix,
                             first_referenced, last_referenced)
    VALUES (NEW.target_group, NEW.target_kind, NEW.target_namespace, NEW.target_name, NEW.prefix,
            strftime('%Y-%m-%dT%H:%M:%f000Z', 'now'), strftime('%Y-%m-%dT%H:%M:%f000Z', 'now'))
    ON CONFLICT DO UPDATE SET last_referenced = excluded.last_referenced;
END;

CREATE TRIGGER refs_removed AFTER DELETE ON refs BEGIN
    UPDATE ref_history SET last_referenced = strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')
    WHERE target_kind = OLD.target_kind AND target_namespace = OLD.target_namespace
      AND target_name = OLD.target_name AND target_group = OLD.target_group AND prefix = OLD.prefix;
END;

-- The labels and annotations kubegcd keeps: those the built-in rules read,
-- and those --mirror-labels and --mirror-annotations allow.
CREATE TABLE object_labels (
    uid   TEXT NOT NULL REFERENCES objects (uid) ON DELETE CASCADE,
    key   TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (uid, key)
) WITHOUT ROWID;
CREATE INDEX object_labels_by_key ON object_labels (key, value);

CREATE TABLE object_annotations (
    uid   TEXT NOT NULL REFERENCES objects (uid) ON DELETE CASCADE,
    key   TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (uid, key)
) WITHOUT ROWID;
CREATE INDEX object_annotations_by_key ON object_annotations (key, value);

-- The few typed fields the built-in rules read.
CREATE TABLE jobs (
    uid                        TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    -- 1 when the Complete or Failed condition is True
    complete                   INTEGER NOT NULL DEFAULT 0,
    failed                     INTEGER NOT NULL DEFAULT 0,
    -- when it finished: status.completionTime, or the Failed condition's time
    finished_at                TEXT,
    ttl_seconds_after_finished INTEGER
) WITHOUT ROWID;

CREATE TABLE cronjobs (
    uid                           TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    successful_jobs_history_limit INTEGER,
    failed_jobs_history_limit     INTEGER,
    suspend                       INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE secrets (
    uid  TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    type TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

CREATE TABLE pvcs (
    uid         TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    phase       TEXT NOT NULL DEFAULT '',
    volume_name TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- spec.replicas of Deployments, ReplicaSets, StatefulSets and
-- ReplicationControllers; NULL when unset.
CREATE TABLE workloads (
    uid      TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    replicas INTEGER
) WITHOUT ROWID;

-- When a resource was first listed in full into this mirror. A target is
-- never called unreferenced for longer than its referrers have been
-- watched.
ALTER TABLE resources ADD COLUMN first_synced_at TEXT;

-- What each rule matches now, and since when it has matched without a
-- break. passes counts the consecutive passes that matched it.
CREATE TABLE rule_matches (
    rule_id TEXT    NOT NULL,
    uid     TEXT    NOT NULL REFERENCES objects (uid) ON DELETE CASCADE,
    reason  TEXT    NOT NULL DEFAULT '',
    since   TEXT    NOT NULL,
    passes  INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (rule_id, uid)
) WITHOUT ROWID;
CREATE INDEX rule_matches_by_uid ON rule_matches (uid);
