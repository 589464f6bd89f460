DROP TABLE intents;
