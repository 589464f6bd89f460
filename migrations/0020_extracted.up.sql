-- What ingestion extracts of an object beside its metadata: its
-- references, its kept labels and annotations, and the typed fields of
-- the rules (0018). extracted_hash is a hash of all of it, NULL when there
-- is none. A write whose hash is the stored one leaves those rows alone:
-- a Pod's status update rewrites none of its references.
ALTER TABLE objects ADD COLUMN extracted_hash INTEGER;

-- How ingestion extracts a resource's objects: extracted_refs names what
-- it reads references from, kept_keys the labels and annotations it keeps.
-- When either changes, the resource is listed again at start, because the
-- mirror's rows were extracted another way. When extracted_refs changes,
-- first_synced_at starts over too: the references' history misses what
-- was not extracted before.
ALTER TABLE resources ADD COLUMN extracted_refs TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN kept_keys TEXT NOT NULL DEFAULT '';
