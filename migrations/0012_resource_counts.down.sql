DROP TRIGGER objects_count_move;
DROP TRIGGER objects_count_delete;
DROP TRIGGER objects_count_insert;
DROP TABLE resource_counts;
