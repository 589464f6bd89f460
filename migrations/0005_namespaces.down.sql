DROP TABLE namespaces;
