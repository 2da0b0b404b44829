"""The source of truth: fact versions, supersession, raw log, tombstones, audit."""
