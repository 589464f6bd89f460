-- Which ownerReferences an ownerReference lint rule (internal/diagnose) may
-- flag, kept as the mirror changes, so that GET /lint reads the few
-- candidates through a partial index instead of joining every reference to
-- its dependent and owner (a whole-mirror join costs more than 100 ms at
-- 200,000 objects). The rules themselves decide in Go; this is their
-- preselection, and must let through every reference they flag.

-- The preselection of one reference, from its dependent and its owner (by
-- UID). 1 when some rule may apply: the owner is not mirrored; it is in
-- another namespace than the dependent (a cluster-scoped dependent included),
-- or its kind, name or group differ from the reference's; blockOwnerDeletion
-- on a non-controller reference to an owner not being deleted; a second
-- controller reference. The rules on kinds need no clause of their own: an
-- owner mirrored with the reference's group and kind is listed through a
-- resource of that kind, so the kind is served, and it is namespaced exactly
-- when the owner has a namespace.
CREATE VIEW owner_ref_lint AS
SELECT r.dependent_uid, r.position, coalesce((
        o.uid IS NULL
        OR (o.namespace <> '' AND o.namespace <> d.namespace)
        OR o.kind <> r.kind OR o.name <> r.name
        OR (o.api_version <> r.api_version
            AND (CASE WHEN instr(o.api_version, '/') > 0 THEN substr(o.api_version, 1, instr(o.api_version, '/') - 1) ELSE '' END)
             <> (CASE WHEN instr(r.api_version, '/') > 0 THEN substr(r.api_version, 1, instr(r.api_version, '/') - 1) ELSE '' END))
        OR (r.block_owner_deletion AND NOT coalesce(r.controller, 0) AND o.deletion_timestamp IS NULL)
        OR (r.controller AND r.position > 0 AND EXISTS (SELECT 1 FROM owner_refs c
            WHERE c.dependent_uid = r.dependent_uid AND c.position < r.position AND c.controller))
    ), 0) AS candidate
FROM owner_refs r
    JOIN objects d ON d.uid = r.dependent_uid
    LEFT JOIN objects o ON o.uid = r.owner_uid;

ALTER TABLE owner_refs ADD COLUMN lint_candidate INTEGER NOT NULL DEFAULT 0;
UPDATE owner_refs SET lint_candidate = 1 WHERE (SELECT v.candidate FROM owner_ref_lint v
    WHERE v.dependent_uid = owner_refs.dependent_uid AND v.position = owner_refs.position);
CREATE INDEX owner_refs_lint_candidates ON owner_refs (dependent_uid, position) WHERE lint_candidate;

-- What the preselection of a reference depends on, and when it changes: the
-- reference itself (a later reference never changes an earlier one's); its
-- owner appearing, going, or starting or stopping to be deleted (UID, kind,
-- name and namespace of an object never change, nor its group). A
-- dependent's namespace never changes either.
-- A reference is written unmarked and marked only when it is a candidate:
-- most are not, and the check costs less than a second write.
CREATE TRIGGER owner_refs_lint_insert AFTER INSERT ON owner_refs
WHEN (SELECT v.candidate FROM owner_ref_lint v WHERE v.dependent_uid = NEW.dependent_uid AND v.position = NEW.position) BEGIN
    UPDATE owner_refs SET lint_candidate = 1 WHERE dependent_uid = NEW.dependent_uid AND position = NEW.position;
END;

CREATE TRIGGER objects_lint_insert AFTER INSERT ON objects BEGIN
    UPDATE owner_refs SET lint_candidate = (SELECT v.candidate FROM owner_ref_lint v
        WHERE v.dependent_uid = owner_refs.dependent_uid AND v.position = owner_refs.position)
    WHERE owner_uid = NEW.uid;
END;

CREATE TRIGGER objects_lint_deleting AFTER UPDATE OF deletion_timestamp ON objects
WHEN OLD.deletion_timestamp IS NOT NEW.deletion_timestamp BEGIN
    UPDATE owner_refs SET lint_candidate = (SELECT v.candidate FROM owner_ref_lint v
        WHERE v.dependent_uid = owner_refs.dependent_uid AND v.position = owner_refs.position)
    WHERE owner_uid = NEW.uid;
END;

-- An owner gone: its references dangle.
CREATE TRIGGER objects_lint_delete AFTER DELETE ON objects BEGIN
    UPDATE owner_refs SET lint_candidate = 1 WHERE owner_uid = OLD.uid AND NOT lint_candidate;
END;
