"""The database layer: engine, embedded server, schema, migrations."""
