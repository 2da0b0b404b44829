"""The MCP servers: the agent's (`bead mcp`), the curator's (`bead mcp --admin`), the team host's (`--http`).

Entry points, like the proxy and the CLI: each tool translates its arguments,
calls the application layer (bead.core, bead.recall, bead.core.forget,
bead.store.queue, bead.vault) and translates the answer; no SQL, no file
access, no query code of its own lives here. The official MCP SDK (2.x,
``MCPServer``) is imported only by these modules, so ``import bead.cli``
never loads it.

- ``server``  the tools of both roles, and the runtime that runs them (threads, admission, timing)
- ``errors``  structured errors: ``{error, code, retryable, outcome_unknown, next}``
- ``confirm`` the two-call rule of forget, forget_matching and seal
- ``auth``    signed-JWT checks of the team host (PyJWT and its JWKS client)
- ``http``    Streamable HTTP at /mcp, GET /health, loopback unless told otherwise
- ``listen``  the address `--http` listens on, checked before the SDK is imported
"""
