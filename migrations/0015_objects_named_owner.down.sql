ALTER TABLE objects DROP COLUMN named_owner;
