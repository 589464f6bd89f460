-- What ingestion extracts of an object beside its metadata: its
-- references, its kept labels and annotations, and the typed fields of
-- the rules (0018). extracted_hash is a hash of all of it, NULL when there
-- is none. A write whose hash is the stored one leaves those rows alone:
-- a Pod's status update rewrites none of its references.
ALTER TABLE objects ADD COLUMN extracted_hash INTEGER;

-- How ingestion extracts a resource's objects: extraction names the typed
-- fields and references it reads, kept_keys the labels and annotations it
-- keeps. When either changes, the resource is listed again at start,
-- because its rows were extracted another way. When extraction changes,
-- first_synced_at starts over too: the history of references misses what
-- was not extracted before.
ALTER TABLE resources ADD COLUMN extraction TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN kept_keys TEXT NOT NULL DEFAULT '';
