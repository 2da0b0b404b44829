"""The derived index: SQLite FTS5 over current facts and raw turn chunks.

Derived, disposable, never migrated: a schema change bumps SCHEMA_VERSION and
the index is rebuilt from the files.
"""
