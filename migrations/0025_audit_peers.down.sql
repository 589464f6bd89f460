DROP TABLE audit_gaps;
DROP TABLE audit_peer_cursors;
DROP TABLE audit_writers;
DROP TABLE audit_store;
DROP INDEX audit_by_origin;
-- Rows merged from peers are copies; their writers' databases hold them.
DELETE FROM audit WHERE origin_id IS NOT NULL;
ALTER TABLE audit DROP COLUMN origin_id;
