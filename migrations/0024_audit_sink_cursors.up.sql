-- Where each audit sink (the log file, the webhook) stands in the audit
-- history: every row with an id up to last_id has been shipped, or dropped
-- and counted. A restart resumes after it, so a row leaves at least once.
CREATE TABLE audit_sink_cursors (
    sink    TEXT    PRIMARY KEY,
    last_id INTEGER NOT NULL,
    updated TEXT    NOT NULL
) WITHOUT ROWID;
