-- A rule's row may be a finding rather than a match: shown with the
-- matches, never acted on (a TTL that does not parse, say).
ALTER TABLE rule_matches ADD COLUMN finding INTEGER NOT NULL DEFAULT 0;
