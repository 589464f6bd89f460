ALTER TABLE rule_matches DROP COLUMN notified_at;
ALTER TABLE rule_matches DROP COLUMN resource_version;
