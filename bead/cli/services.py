"""bead indexer (and the other long-lived services' shared start-up)."""

from __future__ import annotations

import click


def wait_for_signal():
    """An Event set by SIGTERM or SIGINT."""
    import signal
    import threading

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


@click.command()
def indexer():
    """Watch the store and keep the search index current (a long-lived service).

    Reconciles the whole store against the index on start, then applies hand
    edits, deletes, moves and appended raw turns within about a second.
    """
    from ..core.memory import Memory
    from ..indexer.watch import serve
    from ..log import setup_logging

    setup_logging("indexer")
    mem = Memory.open()
    serve(mem, wait_for_signal())
    mem.close()


COMMANDS = [indexer]
