"""The application layer: what every entry point calls.

The proxy's routes, the CLI, the dream job, forget, status (and the MCP
servers and other routes that come next) translate their own wire format and
call these modules; none of them touches the store's files or the index's
SQL directly.

- ``memory``       the runtime: home, settings, store and index, kept in step
- ``conversation`` one request parsed once into typed turns (who said what)
- ``capture``      turns into the raw log
- ``remember``     "remember X" in the person's own words
- ``pinned``       the pinned block of a project
- ``state``        what the proxy did in each conversation (sessions/)
- ``trace``        one JSON line per proxied request, for `bead why`

Recall (cues, the gate, ranking, rendering) lives in ``bead.recall``.
"""
