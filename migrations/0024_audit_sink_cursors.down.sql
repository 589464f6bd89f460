DROP TABLE audit_sink_cursors;
