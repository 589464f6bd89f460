-- Coordinated leader election: the history of a Lease also records each
-- change of spec.preferredHolder (event preferred-holder-changed). Like
-- holder, preferred_holder is on every row of a Lease ('' when none) and
-- NULL for other kinds. Rows written before this migration have NULL,
-- which reads as none.
ALTER TABLE object_history ADD COLUMN preferred_holder TEXT;

-- Leases and LeaseCandidates mirrored before kubegcd kept their
-- coordination fields (0016) lack them until rewritten. The next start
-- lists coordination.k8s.io again instead of resuming its watches, and the
-- list rewrites every row whose resourceVersion it does not have.
UPDATE objects SET resource_version = '' WHERE api_version LIKE 'coordination.k8s.io/%';
UPDATE resources SET resume_resource_version = '' WHERE api_group = 'coordination.k8s.io';
