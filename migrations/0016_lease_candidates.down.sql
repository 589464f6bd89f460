DROP TABLE lease_candidates;
ALTER TABLE leases DROP COLUMN preferred_holder;
ALTER TABLE leases DROP COLUMN strategy;
