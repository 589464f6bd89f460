ALTER TABLE resources DROP COLUMN short_names;
