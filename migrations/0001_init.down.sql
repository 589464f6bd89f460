DROP TABLE storage_version_entries;
DROP TABLE storage_versions;
DROP TABLE leases;
DROP TABLE nodes;
DROP TABLE pods;
DROP TABLE owner_refs;
DROP TABLE objects;
DROP TABLE resources;
