ALTER TABLE resources DROP COLUMN resume_resource_version;
