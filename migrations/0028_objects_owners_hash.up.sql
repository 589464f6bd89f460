-- A hash of the object's ownerReferences as the history records them.
-- With finalizers and deletion_timestamp beside it, the row holds the
-- facts each write compares with the object's last state. A write reads
-- them here, on the page its update rewrites, instead of the object's last
-- history row: in a large mirror that row is seldom in the writer's cache,
-- and a Lease renewal or a status update changes none of them. NULL, as
-- for rows written before this column, sends the write to the history.
ALTER TABLE objects ADD COLUMN owners_hash INTEGER;
