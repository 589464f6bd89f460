-- Resources found by discovery that support list, watch and delete.
CREATE TABLE resources (
    id               INTEGER PRIMARY KEY,
    api_group        TEXT    NOT NULL,
    version          TEXT    NOT NULL,
    resource         TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    namespaced       INTEGER NOT NULL,
    -- the resourceVersion of the last complete list
    list_resource_version TEXT NOT NULL DEFAULT '',
    synced           INTEGER NOT NULL DEFAULT 0,
    synced_at        TEXT,
    -- bumped by every complete list; rows not seen in a list are removed
    sync_epoch       INTEGER NOT NULL DEFAULT 0,
    UNIQUE (api_group, version, resource)
);

-- Object metadata, one row per object. Never object bodies or Secret data.
CREATE TABLE objects (
    uid                TEXT    PRIMARY KEY,
    resource_id        INTEGER NOT NULL REFERENCES resources (id) ON DELETE CASCADE,
    api_version        TEXT    NOT NULL,
    kind               TEXT    NOT NULL,
    namespace          TEXT    NOT NULL DEFAULT '',
    name               TEXT    NOT NULL,
    resource_version   TEXT    NOT NULL,
    creation_timestamp TEXT,
    deletion_timestamp TEXT,
    deletion_grace_period_seconds INTEGER,
    -- JSON array of strings; NULL when there are none
    finalizers         TEXT,
    sync_epoch         INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX objects_by_resource ON objects (resource_id, namespace, name);
CREATE INDEX objects_by_name ON objects (kind, namespace, name);
CREATE INDEX objects_deleting ON objects (deletion_timestamp) WHERE deletion_timestamp IS NOT NULL;

-- metadata.ownerReferences, all six fields, in their order.
CREATE TABLE owner_refs (
    dependent_uid        TEXT    NOT NULL REFERENCES objects (uid) ON DELETE CASCADE,
    position             INTEGER NOT NULL,
    api_version          TEXT    NOT NULL,
    kind                 TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    owner_uid            TEXT    NOT NULL,
    controller           INTEGER,
    block_owner_deletion INTEGER,
    PRIMARY KEY (dependent_uid, position)
) WITHOUT ROWID;
CREATE INDEX owner_refs_by_owner ON owner_refs (owner_uid);

CREATE TABLE pods (
    uid       TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    phase     TEXT NOT NULL DEFAULT '',
    reason    TEXT NOT NULL DEFAULT '',
    node_name TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX pods_by_phase ON pods (phase);
CREATE INDEX pods_by_node ON pods (node_name);

CREATE TABLE nodes (
    uid   TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    -- status of the Ready condition: True, False, Unknown or '' when absent
    ready TEXT NOT NULL DEFAULT '',
    -- JSON array of {key, value, effect}; NULL when untainted
    taints TEXT,
    -- node.alpha.kubernetes.io/ttl; NULL when absent
    ttl_annotation TEXT
) WITHOUT ROWID;

CREATE TABLE leases (
    uid                    TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    holder_identity        TEXT,
    lease_duration_seconds INTEGER,
    acquire_time           TEXT,
    renew_time             TEXT,
    lease_transitions      INTEGER,
    -- value of the apiserver.kubernetes.io/identity label
    identity_label         TEXT
) WITHOUT ROWID;

CREATE TABLE storage_versions (
    uid                     TEXT PRIMARY KEY REFERENCES objects (uid) ON DELETE CASCADE,
    common_encoding_version TEXT
) WITHOUT ROWID;

-- status.storageVersions of a StorageVersion, one row per API server.
CREATE TABLE storage_version_entries (
    uid                TEXT NOT NULL REFERENCES storage_versions (uid) ON DELETE CASCADE,
    api_server_id      TEXT NOT NULL,
    encoding_version   TEXT NOT NULL,
    -- JSON arrays of strings
    decodable_versions TEXT,
    served_versions    TEXT,
    PRIMARY KEY (uid, api_server_id)
) WITHOUT ROWID;
CREATE INDEX storage_version_entries_by_server ON storage_version_entries (api_server_id);
