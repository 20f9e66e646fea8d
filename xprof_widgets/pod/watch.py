"""Waiting on a Dask cluster without waiting blind: how many hosts are done, and what holds up
the rest when none finishes for a while.

A wait (`pod.profile.gather`) reports each host done to a progress callback (by default one
line on stderr, rewritten in place, for waits longer than a couple of seconds). When no host
finishes for the stall interval (`XPROF_WIDGETS_DASK_STALL_S`, 60 s by default) it asks the
scheduler where the pending tasks are:

- some worker is executing tasks (the pending ones, or others' ahead of them): the cluster is
  working, so the wait goes on and the report says where each pending host is;
- nothing executes anywhere (no worker left, every worker paused for memory, or workers idle
  while the scheduler gives the pending tasks to none) for the whole interval: nothing will
  change without the user, so the wait ends with a ProfileError naming the pending hosts and
  the reason, instead of running out its timeout (30 minutes for a decode) in silence.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from ..errors import ProfileError

STALL_ENV = "XPROF_WIDGETS_DASK_STALL_S"
STALL_S = 60.0
"""How long no host may finish before the wait asks the cluster why (and gives up where
nothing can run)."""
TICK_S = 2.0
"""The longest a wait sleeps between looks at its futures."""
QUIET_S = 2.0
"""The default progress line starts after this long: a quick wait prints nothing."""


@dataclass(frozen=True)
class WaitReport:
    """Where a wait on the cluster stands, as a progress callback receives it."""

    doing: str
    done: int
    total: int
    elapsed_s: float
    stalled: str | None = None
    """Set when no host finished for the stall interval while the cluster still works: where
    the pending hosts are. The wait goes on."""

    def line(self) -> str:
        text = (f"{self.doing} on Dask: {self.done} of {self.total} hosts done "
                f"({self.elapsed_s:.0f} s)")
        return text if self.stalled is None else f"{text}; {self.stalled}"


Progress = Callable[[WaitReport], None]


class ProgressLine:
    """The default progress callback: one line on a stream (stderr), rewritten in place as hosts
    finish, ended when all are done; a stall's report is a line of its own. Silent for waits
    shorter than QUIET_S."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.shown = False

    def __call__(self, report: WaitReport) -> None:
        finished = report.done == report.total
        if report.elapsed_s < QUIET_S and report.stalled is None and not self.shown:
            return
        end = "\n" if finished or report.stalled else ""
        self.stream.write(f"\rxprof_widgets: {report.line()}{end}")
        self.stream.flush()
        self.shown = not end


def stall_interval() -> float:
    """The stall interval in seconds: XPROF_WIDGETS_DASK_STALL_S, else STALL_S."""
    setting = os.environ.get(STALL_ENV, "").strip()
    if not setting:
        return STALL_S
    try:
        value = float(setting)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ProfileError(f"{STALL_ENV}={setting!r}: expected a number of seconds above 0.")
    return value


@dataclass(frozen=True)
class Look:
    """What the scheduler says of the pending tasks: `working` (some worker executes tasks),
    where each pending host is, in words, and the workers it knows."""

    working: bool
    where: str
    workers: set[str]


def look(client: Any, pending: dict[str, Any], known: set[str] | None) -> Look:
    """Asks the scheduler about the pending hosts' futures; `known` are the workers there were
    at the wait's first look (those gone since are named as lost)."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    on = {key: worker for worker, keys in client.processing().items() for key in keys}
    lost = sorted((known or set()) - set(workers))
    lost_text = f"; {len(lost)} worker(s) lost during the wait ({listed(lost)})" if lost else ""
    if not workers:
        return Look(False, f"no worker is connected to the scheduler{lost_text}", set())
    paused = sorted(w for w, info in workers.items() if info.get("status") == "paused")
    executing = [w for w, info in workers.items() if w not in paused
                 and info.get("metrics", {}).get("task_counts", {}).get("executing")]
    orphans = client.run_on_scheduler(_bound_to_lost_workers, [f.key for f in
                                                                pending.values()])
    said = [listed([f"{host} {_place(on.get(future.key), paused, future.key in orphans)}"
                    for host, future in pending.items()])]
    if paused:
        said.append(f"worker(s) {listed(paused)} paused for memory ("
                    + ", ".join(_memory(workers[w]) for w in paused[:3]) + ")")
    if not executing:
        idle = len(workers) - len(paused)
        said.append(f"{idle} running worker(s) idle, executing nothing" if idle
                    else "every worker is paused")
    return Look(bool(executing), "; ".join(said) + lost_text, set(workers))


class Watch:
    """A wait's progress and stall keeping: `check` after each look at the futures."""

    def __init__(self, client: Any, doing: str, total: int, progress: Progress | None = None,
                 stall_s: float | None = None):
        self.client = client
        self.doing = doing
        self.total = total
        self.progress = progress
        self.stall_s = stall_interval() if stall_s is None else stall_s
        self.tick_s = min(TICK_S, self.stall_s / 4)
        self.started = self.moved = self.said = time.monotonic()
        self.blocked_since: float | None = None
        self.done = 0
        self.known: set[str] | None = None  # the workers at the first look: most waits need none

    def check(self, done: int, pending: dict[str, Any]) -> None:
        """Reports a host done; where none finished this tick, looks at the cluster: reports a
        stall where it works (once per stall interval), raises where nothing has run for the
        whole interval."""
        now = time.monotonic()
        if done > self.done or done == self.total:
            self.done, self.moved, self.blocked_since = done, now, None
            self._report(now)
            return
        if not pending:
            return
        seen = look(self.client, pending, self.known)
        self.known = self.known if self.known is not None else seen.workers
        if seen.working:
            self.blocked_since = None
            if now - max(self.moved, self.said) >= self.stall_s:
                self.said = now
                self._report(now, f"no host done for {now - self.moved:.0f} s, the cluster "
                                  f"still working: {seen.where}")
            return
        self.blocked_since = self.blocked_since or now
        if now - self.blocked_since >= self.stall_s:
            raise ProfileError(
                f"{self.doing} stopped: no host done for {now - self.moved:.0f} s and nothing "
                f"running on the cluster for {now - self.blocked_since:.0f} s: {seen.where}. "
                f"{self.done} of {self.total} hosts were done. Give the workers more memory, "
                "start workers (or scale the cluster up), or restart it, and open again; "
                f"{STALL_ENV} sets how long to wait ({self.stall_s:g} s now).")

    def _report(self, now: float, stalled: str | None = None) -> None:
        if self.progress is not None:
            self.progress(WaitReport(self.doing, self.done, self.total, now - self.started,
                                     stalled))


def _place(worker: str | None, paused: list[str], gone: bool = False) -> str:
    if worker is None:
        return "(its worker is gone)" if gone else "(waiting for a worker)"
    return f"(on {worker}, {'paused' if worker in paused else 'running'})"


def _bound_to_lost_workers(keys: list[str], dask_scheduler: Any) -> set[str]:
    """The keys (on the scheduler) of tasks bound to workers none of which is left: a host's
    task whose worker died with the host's data (pod.profile.next_to)."""
    alive = set(dask_scheduler.workers)
    return {k for k in keys if (ts := dask_scheduler.tasks.get(k)) is not None
            and ts.worker_restrictions and not ts.loose_restrictions
            and not ts.worker_restrictions & alive}


def _memory(info: dict) -> str:
    used = info.get("metrics", {}).get("memory", 0) / 2**30
    limit = info.get("memory_limit") or 0
    return f"{used:.1f} of {limit / 2**30:.1f} GiB" if limit else f"{used:.1f} GiB"


def listed(names: list[str], most: int = 5) -> str:
    """The first few names, and how many more: a pod may have hundreds of hosts."""
    more = len(names) - most
    return ", ".join(names[:most]) + (f" and {more} more" if more > 0 else "")
