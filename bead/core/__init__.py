"""The application layer: what every entry point calls.

The proxy's routes, the CLI, the MCP servers, the dream job, forget, status
(and the routes that come next) translate their own wire format and
call these modules; none of them touches the store's files or the index's
SQL directly.

- ``memory``       the runtime: home, settings, store and index, kept in step
- ``conversation`` one request parsed once into typed turns (who said what)
- ``capture``      turns into the raw log
- ``remember``     "remember X" in the person's own words, and remember as a tool (``remember_fact``)
- ``pinned``       the pinned block of a project
- ``query``        memory an agent asks for: recall, one fact, its history, search, the bundle for a task
- ``viewer``       who is asking: the home's person, or one member of a team host (what they may see)
- ``curate``       the curator's summary, pin and unpin
- ``state``        what the proxy did in each conversation (sessions/)
- ``trace``        one JSON line per proxied request, for `bead why`

Recall (cues, the gate, ranking, rendering) lives in ``bead.recall``.
"""
