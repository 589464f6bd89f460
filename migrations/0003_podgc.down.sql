ALTER TABLE pending DROP COLUMN not_before;
ALTER TABLE pods DROP COLUMN generation;
