-- The resourceVersion up to which the mirror of a resource holds every
-- change: the last complete list's, then the last committed watch event's
-- or bookmark's, written in the transaction of the rows it covers. A start
-- resumes the watch from there instead of listing again; '' while a list is
-- under way or before the first one, when only a list will do.
ALTER TABLE resources ADD COLUMN resume_resource_version TEXT NOT NULL DEFAULT '';
