"""The dream worker: a long-lived APScheduler process that runs the pass on a cron schedule.

APScheduler wakes the worker every minute; each wake asks one question: has
a scheduled time (``dream.schedule``, cron, local time) passed since the last
run? A laptop asleep at 03:07 therefore runs the pass once soon after it
wakes, not never and not twice, whatever happened to the scheduler's own
timers during the sleep.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..config import SCHEDULE_FIX, schedule_problem
from ..store.audit import iso
from ..store.reports import DreamState
from .run import Dream, LockHeld

log = logging.getLogger("bead.dream")


FUTURE_SLACK_S = 300  # a last run this far after the clock's now was written by a clock that ran ahead


def due(schedule: str, last_run: datetime, now: datetime) -> bool:
    """True when a fire time of ``schedule`` lies in (last_run, now]."""
    from apscheduler.triggers.cron import CronTrigger

    trigger = CronTrigger.from_crontab(schedule, timezone=now.astimezone().tzinfo)
    nxt = trigger.get_next_fire_time(None, last_run.astimezone(now.astimezone().tzinfo))
    return nxt is not None and nxt <= now


class Worker:
    def __init__(self, make_dream: Callable[[], Dream], schedule: str, state_path, clock: Callable[[], datetime], root=None):
        self.make_dream = make_dream
        self.schedule = schedule
        self.state_path = state_path
        self.root = root  # the bead home: the state file is reached from it without following a link
        self.clock = clock
        self.runs = 0
        self.failed_at: datetime | None = None  # a pass that raised: the next is not before the next fire time
        self.stop: Any = None  # serve's stop event, handed to each run

    def last_run(self) -> datetime:
        st = DreamState(self.state_path, self.root)
        if "last_run" not in st.data and "worker_since" not in st.data:
            # First start: count from now, so installing bead does not start a run.
            st.data["worker_since"] = iso(self.clock())
            st.save()
        value = st.data.get("last_run") or st.data["worker_since"]
        last = datetime.fromisoformat(value)
        now = self.clock()
        if (last - now).total_seconds() > FUTURE_SLACK_S:
            # The clock went back (or a run's clock was ahead): counted from that time, no pass would come until the
            # clock caught up with it. Count from now.
            log.warning("dream: the last run is recorded at %s, after now (%s): counting from now", value, iso(now))
            st.data.pop("last_run", None)
            st.data["worker_since"] = iso(now)
            st.save()
            return now
        return last

    def tick(self) -> bool:
        """One wake: run the pass if a scheduled time has passed. True if it ran."""
        if self.stop is not None and self.stop.is_set():
            return False  # stopping: a wake between the stop and the scheduler's shutdown starts nothing
        now = self.clock()
        since = self.last_run()
        if self.failed_at is not None and self.failed_at > since:
            since = self.failed_at
        if not due(self.schedule, since, now):
            return False
        try:
            dream = self.make_dream()
            if self.stop is not None and getattr(dream, "stop", None) is None:
                dream.stop = self.stop
            rep = dream.run()
        except LockHeld:
            log.info("dream: another run holds the lock; skipping this wake")
            return False
        except Exception as exc:  # noqa: BLE001 - the worker outlives a pass that failed; the next one retries
            # Not again at the next wake (each pass calls a paid model): at the schedule's next time.
            self.failed_at = now
            log.error("dream: pass failed (%s: %s); next try at the schedule's next time", type(exc).__name__, exc)
            return False
        self.runs += 1
        log.info("dream: pass done: %d calls, %d sessions, %d failed", rep.calls, len(rep.sessions), len(rep.failed))
        return True


def serve(worker: Worker, stop, interval_s: float = 60.0) -> None:
    """Wake every ``interval_s`` until ``stop`` is set. A schedule that can never run a pass is said once, and the
    worker waits for its stop without waking: it does not exit, which under `bead up` would stop the proxy and the
    indexer with it (and under a service manager restart it in a loop); `bead status` reports the schedule."""
    from apscheduler.schedulers.background import BackgroundScheduler

    problem = schedule_problem(worker.schedule, worker.clock())
    if problem is not None:
        log.error("dream worker idle: %s; %s, then restart the dream worker", problem, SCHEDULE_FIX)
        _wait(stop)
        return

    worker.stop = stop  # a run in progress starts no model call after it (bead.dream.run.Dream.stop)
    sched = BackgroundScheduler()
    sched.add_job(
        worker.tick,
        "interval",
        seconds=interval_s,
        id="dream-tick",
        max_instances=1,
        coalesce=True,
        next_run_time=datetime.now().astimezone(),
    )
    sched.start()
    log.info("dream worker up: schedule %r, checking every %g s", worker.schedule, interval_s)
    try:
        _wait(stop)
    finally:
        sched.shutdown(wait=True)


STOP_CHECK_S = 0.5


def _wait(stop) -> None:
    """Until ``stop`` is set, waking every STOP_CHECK_S: a SIGTERM the kernel hands to another of the process's threads
    (the scheduler's) only marks Python's handler as due, and the main thread runs it when it next wakes; blocked in
    an untimed wait, it never did, and the worker outlived its stop (a service manager's timeout, then SIGKILL)."""
    while not stop.wait(STOP_CHECK_S):
        pass
