DROP INDEX owner_refs_by_owner;
ALTER TABLE owner_refs DROP COLUMN sole;
CREATE INDEX owner_refs_by_owner ON owner_refs (owner_uid, dependent_uid, position, controller, block_owner_deletion);
