-- A cascade preview reads every reference of every object it walks. Most
-- objects have one reference, the one the walk went down through: the owner
-- index now carries that reference whole (apiVersion, kind, name) and
-- whether it is its dependent's only one (sole), so that the walk down
-- needs no seek into owner_refs' primary key for such a dependent. A
-- dependent's references are always written together, so sole is set when
-- they are. The entries keep their order (owner, dependent, position).
DROP INDEX owner_refs_by_owner;
ALTER TABLE owner_refs ADD COLUMN sole INTEGER NOT NULL DEFAULT 0;
UPDATE owner_refs SET sole = 1 WHERE position = 0
    AND NOT EXISTS (SELECT 1 FROM owner_refs o WHERE o.dependent_uid = owner_refs.dependent_uid AND o.position > 0);
CREATE INDEX owner_refs_by_owner ON owner_refs (owner_uid, dependent_uid, position, controller, block_owner_deletion,
    sole, api_version, kind, name);
