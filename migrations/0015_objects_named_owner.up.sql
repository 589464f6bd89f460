-- A walk down the ownership graph (/graph?uid=, the cascade preview) reads
-- every object it reaches from objects, and looked for the dependents of
-- each in the owner index: most objects have none, and each look was a
-- seek that found nothing. named_owner is 1 once an ownerReference has
-- named the object: the walk looks for the dependents of those alone (and
-- of owners not mirrored). It is set when such a reference is written or
-- when the object is, and is not cleared when the references go: a stale 1
-- costs the walk one seek, as before.
ALTER TABLE objects ADD COLUMN named_owner INTEGER NOT NULL DEFAULT 0;
UPDATE objects SET named_owner = 1 WHERE uid IN (SELECT owner_uid FROM owner_refs);
