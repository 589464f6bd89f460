-- What a rule that deletes needs of each match: the object's
-- resourceVersion at the last pass that matched it, which the live read
-- before the delete must find unchanged, and when its notice went out.
ALTER TABLE rule_matches ADD COLUMN resource_version TEXT NOT NULL DEFAULT '';
ALTER TABLE rule_matches ADD COLUMN notified_at TEXT;
