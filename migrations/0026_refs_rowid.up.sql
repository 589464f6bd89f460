-- refs becomes a rowid table with two narrow indexes. Its primary key
-- began with the referrer's UID, which is random: a first fill's rows
-- landed on every leaf of the whole key (about 130 bytes a row) and of
-- refs_by_target, which repeated it. Rows now append in the order they are
-- written, and each index holds its own columns and a rowid: refs_by_target
-- keeps the group and prefix of the target, a byte or two, so that the
-- question "is this target referenced?" reads the index alone. The writes
-- keep a referrer's references unique (see writeRefs), as the key did.
DROP TRIGGER refs_removed;
DROP INDEX refs_by_target;
ALTER TABLE refs RENAME TO refs_old;

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
    prefix           INTEGER NOT NULL DEFAULT 0
);
INSERT INTO refs (referrer_uid, target_group, target_kind, target_namespace, target_name, via, optional, prefix)
SELECT referrer_uid, target_group, target_kind, target_namespace, target_name, via, optional, prefix
FROM refs_old ORDER BY referrer_uid, target_group, target_kind, target_namespace, target_name, via;
DROP TABLE refs_old;
CREATE INDEX refs_by_referrer ON refs (referrer_uid);
CREATE INDEX refs_by_target ON refs (target_kind, target_namespace, target_name, target_group, prefix);

CREATE TRIGGER refs_removed AFTER DELETE ON refs BEGIN
    UPDATE ref_history SET last_referenced = strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')
    WHERE target_kind = OLD.target_kind AND target_namespace = OLD.target_namespace
      AND target_name = OLD.target_name AND target_group = OLD.target_group AND prefix = OLD.prefix;
END;
