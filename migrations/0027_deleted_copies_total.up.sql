-- How many copies of deleted objects are kept, and their compressed bytes,
-- kept by triggers as copies come and go. The metrics and the pruning read
-- this one row: a sum over deleted_copies reads every page of the table,
-- bodies included, up to --deleted-copies-max-bytes.
CREATE TABLE deleted_copies_total (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    copies INTEGER NOT NULL,
    bytes  INTEGER NOT NULL
);
INSERT INTO deleted_copies_total (id, copies, bytes)
SELECT 1, count(*), coalesce(sum(size), 0) FROM deleted_copies;

-- A copy replaced is deleted, then inserted (see PutDeletedCopy): REPLACE
-- would fire no delete trigger.
CREATE TRIGGER deleted_copies_added AFTER INSERT ON deleted_copies BEGIN
    UPDATE deleted_copies_total SET copies = copies + 1, bytes = bytes + NEW.size;
END;
CREATE TRIGGER deleted_copies_removed AFTER DELETE ON deleted_copies BEGIN
    UPDATE deleted_copies_total SET copies = copies - 1, bytes = bytes - OLD.size;
END;
CREATE TRIGGER deleted_copies_resized AFTER UPDATE OF size ON deleted_copies BEGIN
    UPDATE deleted_copies_total SET bytes = bytes - OLD.size + NEW.size;
END;
