ALTER TABLE resources DROP COLUMN kept_keys;
ALTER TABLE resources DROP COLUMN extracted_refs;
ALTER TABLE objects DROP COLUMN extracted_hash;
