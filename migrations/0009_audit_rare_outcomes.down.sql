DROP INDEX audit_rare_outcomes;
