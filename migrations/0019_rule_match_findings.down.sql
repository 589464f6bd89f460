ALTER TABLE rule_matches DROP COLUMN finding;
