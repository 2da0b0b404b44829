"""Terminal entry points: `bead review`.

Like the CLI, the proxy and the MCP servers, these translate (keys, lines of
text) and call the application layer (bead.core.review, which calls the
queue, forget, the vault). prompt_toolkit is imported only here, and only
when `bead review` runs at a terminal, so ``import bead.cli`` never loads it.

- ``text``    stored text made safe to print on a terminal (no control sequence gets through)
- ``review``  the review walk: prompt_toolkit at a terminal, plain lines otherwise
"""
