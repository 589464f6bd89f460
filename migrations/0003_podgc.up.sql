-- metadata.generation of a pod: PodGC sets status.observedGeneration from it.
ALTER TABLE pods ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
-- Pods mirrored before the column existed are rewritten by the next list
-- (a relist skips rows whose resourceVersion it already has).
UPDATE objects SET resource_version = '' WHERE uid IN (SELECT uid FROM pods);

-- The earliest time a pending decision may be acted on: the end of a
-- quarantine or of a back-off. NULL when it may be acted on now.
ALTER TABLE pending ADD COLUMN not_before TEXT;
