DROP TRIGGER objects_lint_delete;
DROP TRIGGER objects_lint_deleting;
DROP TRIGGER objects_lint_insert;
DROP TRIGGER owner_refs_lint_insert;
DROP INDEX owner_refs_lint_candidates;
ALTER TABLE owner_refs DROP COLUMN lint_candidate;
DROP VIEW owner_ref_lint;
