-- The short names discovery lists for a resource (cm, deploy, po), as a JSON
-- array of strings; NULL when it has none. Lookups by kind accept them, as
-- kubectl does. Rows written before the column are filled when their watcher
-- starts again, at the next start of kubegcd.
ALTER TABLE resources ADD COLUMN short_names TEXT;
