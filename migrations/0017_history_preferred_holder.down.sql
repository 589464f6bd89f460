ALTER TABLE object_history DROP COLUMN preferred_holder;
