DROP TABLE pending;
DROP TABLE audit;
