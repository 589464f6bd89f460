DROP TRIGGER deleted_copies_resized;
DROP TRIGGER deleted_copies_removed;
DROP TRIGGER deleted_copies_added;
DROP TABLE deleted_copies_total;
