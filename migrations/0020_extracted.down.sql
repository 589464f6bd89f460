ALTER TABLE resources DROP COLUMN kept_keys;
ALTER TABLE resources DROP COLUMN extraction;
ALTER TABLE objects DROP COLUMN extracted_hash;
