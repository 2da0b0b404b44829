"""Logging: one line per event on stderr; JSON lines when not on a terminal.

Never a request body or a credential: callers log kinds and exception names.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + "Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info and record.exc_info[0] is not None:
            entry["exc"] = record.exc_info[0].__name__
        return json.dumps(entry)


class TerminalFormatter(logging.Formatter):
    """A line for a person's terminal: every control or invisible character in it shown as an escape
    (bead.display.visible). A logged name may be a file's another program chose, or a session's a request
    named: an escape sequence in it must reach the terminal as text, not act on it."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        from .display import visible

        # The line itself stays one line: a line break in a logged name (a folder's, a key's) showed as a new,
        # made-up log line after it. Only a traceback after it keeps its lines (``format``).
        return visible(super().formatMessage(record))

    def format(self, record: logging.LogRecord) -> str:
        from .display import visible

        return visible(super().format(record), multiline=True)


def fallback_to_stderr() -> None:
    """A command that sets up no logging of its own (`bead dream run`, `bead import`) still says its warnings on
    stderr, as Python's last-resort handler would, but escaped (TerminalFormatter)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(TerminalFormatter("%(message)s"))
    logging.lastResort = handler


def _thread_ended(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "a thread"
    logging.getLogger("bead").error(
        "thread %s ended on %s; the service goes on without it (a restart starts it again)",
        name,
        args.exc_type.__name__,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback) if args.exc_value is not None else None,
    )


def setup_logging(service: str, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if sys.stderr.isatty():
        handler.setFormatter(TerminalFormatter(f"%(asctime)s {service} %(levelname)s %(message)s"))
    else:
        handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # A thread that ends on an exception (watchdog's reader on a tree deeper than the stack, a library's worker)
    # would print a raw traceback between the log's lines: a service's log is JSON lines that `journalctl` and
    # `bead status` read one by one, and a traceback may quote captured text. It is one logged line like any other.
    threading.excepthook = _thread_ended
    # httpx logs every request line at INFO; the proxy logs what matters itself.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    # APScheduler logs every wake of the dream worker at INFO.
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
