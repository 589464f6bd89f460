-- Ingestion records a reference added in ref_history itself, once per
-- target and transaction, rather than a trigger once per row: a
-- Deployment's pods add one row of history, not one per pod. The trigger
-- refs_removed stays, so every path that drops a reference still counts.
DROP TRIGGER refs_added;
