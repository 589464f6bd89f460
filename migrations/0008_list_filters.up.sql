-- /audit?kind= and ?rule= page newest first (by id) within one kind or
-- rule, as audit_by_controller and audit_by_namespace do for theirs. Both
-- compare without case: an operator types configmap or br-21-03.
CREATE INDEX audit_by_kind ON audit (kind COLLATE NOCASE, id);
CREATE INDEX audit_by_rule ON audit (rule COLLATE NOCASE, id);

-- /pending pages by (since, controller, uid, action), either way: a
-- WITHOUT ROWID table's index ends with its primary key.
CREATE INDEX pending_by_since ON pending (since);
