DROP TRIGGER refs_removed;
DROP INDEX refs_by_target;
DROP INDEX refs_by_referrer;
ALTER TABLE refs RENAME TO refs_new;

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
INSERT OR IGNORE INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via, optional, prefix)
SELECT referrer_uid, target_group, target_kind, target_namespace, target_name, via, optional, prefix FROM refs_new;
DROP TABLE refs_new;
CREATE INDEX refs_by_target ON refs (target_kind, target_namespace, target_name);

CREATE TRIGGER refs_removed AFTER DELETE ON refs BEGIN
    UPDATE ref_history SET last_referenced = strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')
    WHERE target_kind = OLD.target_kind AND target_namespace = OLD.target_namespace
      AND target_name = OLD.target_name AND target_group = OLD.target_group AND prefix = OLD.prefix;
END;
