DROP INDEX pending_by_since;
DROP INDEX audit_by_rule;
DROP INDEX audit_by_kind;
