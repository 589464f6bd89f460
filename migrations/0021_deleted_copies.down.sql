DROP TABLE rule_spared;
DROP TABLE deleted_copies;
