DROP INDEX owner_refs_by_owner;
CREATE INDEX owner_refs_by_owner ON owner_refs (owner_uid);
