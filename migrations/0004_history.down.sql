DROP TABLE history_owner_refs;
DROP TABLE object_history;
