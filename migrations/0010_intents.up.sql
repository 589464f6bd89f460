-- A write to the cluster decided and about to be sent. The row is committed
-- before the request leaves and deleted in the transaction that writes the
-- write's audit row, so a row found at start is a write whose outcome a crash
-- lost: kubegcd settles it against the cluster before its controllers run.
-- It holds what that audit row needs.
CREATE TABLE intents (
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
    -- the version the write was decided on, for the pending row of a write
    -- whose outcome is unknown
    resource_version TEXT NOT NULL DEFAULT '',
    facts       TEXT,
    reason      TEXT    NOT NULL DEFAULT ''
);
