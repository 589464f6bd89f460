DROP INDEX audit_by_rule;
DROP INDEX audit_by_kind;
