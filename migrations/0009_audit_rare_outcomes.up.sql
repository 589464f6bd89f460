-- /audit?outcome=failed (conflict, not-found, …): the rows of a rare outcome
-- are found through this index instead of a walk back through the whole
-- history. The common outcomes are left out: most rows have one, a walk
-- back finds a page of them at once, and they cost no index write.
CREATE INDEX audit_rare_outcomes ON audit (outcome, id) WHERE outcome NOT IN ('applied', 'dry-run', 'skipped');
