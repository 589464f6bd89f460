-- The owner index carries each reference's controller and
-- blockOwnerDeletion flags after its key, so that a walk down the graph
-- reads its edges whole from the index, without a seek per edge into
-- owner_refs: a /graph?uid= of 10,000 nodes saves 10,000 seeks. The
-- entries keep their order (owner, dependent, position); the two flags add
-- two bytes of record header each, as SQLite stores 0, 1 and NULL in none.
DROP INDEX owner_refs_by_owner;
CREATE INDEX owner_refs_by_owner ON owner_refs (owner_uid, dependent_uid, position, controller, block_owner_deletion);
