ALTER TABLE objects DROP COLUMN owners_hash;
