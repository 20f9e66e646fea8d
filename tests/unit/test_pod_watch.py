"""A Dask wait reports the hosts done of all and, when none finishes for the stall interval, says
which hosts are pending and why: it goes on while the cluster works, and raises a ProfileError
naming the hosts and the reason (paused workers, none left, none running them) where nothing
runs, long before its timeout. Clusters of threads in this process (processes=False): a worker
paused for memory, a task no worker may run, a worker closed during the wait."""

from __future__ import annotations

import io
import threading
import time

import pytest
from test_pod_ranks import DLRM

import xprof_widgets as xw
from xprof_widgets.errors import ProfileError
from xprof_widgets.pod.profile import gather
from xprof_widgets.pod.watch import STALL_ENV, ProgressLine, WaitReport, stall_interval

distributed = pytest.importorskip("dask.distributed")
dask = pytest.importorskip("dask")
TIMEOUT_S = 30.0
"""What the waits below would run out without the stall check."""


def cluster(workers: int = 1, memory_limit: str = "auto", **config: object) -> tuple:
    with dask.config.set(config):
        made = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                        processes=False, dashboard_address=None,
                                        memory_limit=memory_limit)
    return made, distributed.Client(made)


@pytest.fixture
def closing():
    """Clusters made by a test, closed after it."""
    made = []
    yield made
    for client, local in made:
        client.close()
        local.close()


def idle(x: int) -> int:
    return x


def test_hosts_done_are_reported_and_a_working_cluster_is_waited_for(closing):
    local, client = cluster()
    closing.append((client, local))
    reports: list[WaitReport] = []
    futures = {"rank 0": client.submit(idle, 0, pure=False),
               "rank 1": client.submit(time.sleep, 3.0, pure=False)}
    started = time.monotonic()
    gather(client, futures, "decoding", TIMEOUT_S, progress=reports.append, stall_s=1.0)
    assert time.monotonic() - started >= 3.0  # no error while rank 1 ran
    assert [r.done for r in reports if r.stalled is None] == [1, 2]
    (stall, *_) = [r for r in reports if r.stalled]
    assert stall.done == 1 and "rank 1 (on inproc://" in stall.stalled
    assert "still working" in stall.stalled and "running" in stall.stalled


def paused(closing: list) -> object:
    """A client of one worker paused for memory: the process already holds more than 1% of
    4 GB."""
    local, client = cluster(memory_limit="4GB", **{"distributed.worker.memory.pause": 0.01,
                                                   "distributed.worker.memory.target": False,
                                                   "distributed.worker.memory.spill": False})
    closing.append((client, local))
    while {w["status"] for w in client.scheduler_info()["workers"].values()} != {"paused"}:
        time.sleep(0.05)  # the memory monitor's first look
    return client


def test_a_worker_paused_for_memory_is_named(closing):
    client = paused(closing)
    futures = {f"rank {k}": client.submit(idle, k, pure=False) for k in range(3)}
    started = time.monotonic()
    with pytest.raises(ProfileError, match=r"decoding stopped: .*rank 0 .*rank 2.* paused for "
                                           r"memory \(.* GiB\); every worker is paused"):
        gather(client, futures, "decoding", TIMEOUT_S, stall_s=1.0)
    assert time.monotonic() - started < 10


def test_an_open_says_why_it_stopped_within_the_stall_interval(closing, monkeypatch):
    client = paused(closing)
    monkeypatch.setenv(STALL_ENV, "1")
    with pytest.raises(ProfileError, match=r"rank 0 \(waiting for a worker\).*and 3 more; "
                                           r"worker\(s\) inproc://\S+ paused for memory"):
        xw.open_profile(DLRM, client=client)


def test_tasks_no_worker_runs_are_named(closing):
    local, client = cluster(workers=2)
    closing.append((client, local))
    futures = {"rank 0": client.submit(idle, 0, pure=False),
               "rank 1": client.submit(idle, 1, pure=False, resources={"GPU": 1})}
    with pytest.raises(ProfileError, match=r"rank 1 \(waiting for a worker\); 2 running worker"
                                           r"\(s\) idle.*1 of 2 hosts were done"):
        gather(client, futures, "decoding", TIMEOUT_S, stall_s=1.0)


def test_workers_lost_during_the_wait_are_named(closing):
    local, client = cluster()
    closing.append((client, local))
    futures = {"rank 3": client.submit(idle, 3, pure=False, resources={"GPU": 1})}
    threading.Timer(0.6, local.scale, (0,)).start()
    with pytest.raises(ProfileError, match=r"no worker is connected to the scheduler; 1 "
                                           r"worker\(s\) lost during the wait"):
        gather(client, futures, "decoding", TIMEOUT_S, stall_s=1.5)


def test_the_progress_line_is_quiet_for_a_quick_wait():
    out = io.StringIO()
    line = ProgressLine(out)
    line(WaitReport("decoding", 1, 2, 0.5))
    line(WaitReport("decoding", 2, 2, 0.9))
    assert out.getvalue() == ""
    line(WaitReport("decoding", 1, 2, 2.5))
    line(WaitReport("decoding", 1, 2, 65.0, "no host done for 62 s, the cluster still working"))
    line(WaitReport("decoding", 2, 2, 70.0))
    assert out.getvalue().split("\r")[1:] == [
        "xprof_widgets: decoding on Dask: 1 of 2 hosts done (2 s)",
        ("xprof_widgets: decoding on Dask: 1 of 2 hosts done (65 s); no host done for 62 s, "
         "the cluster still working\n"),
        "xprof_widgets: decoding on Dask: 2 of 2 hosts done (70 s)\n"]


def test_the_stall_interval_is_set_by_the_environment(monkeypatch):
    monkeypatch.delenv(STALL_ENV, raising=False)
    assert stall_interval() == 60.0
    monkeypatch.setenv(STALL_ENV, "300")
    assert stall_interval() == 300.0
    monkeypatch.setenv(STALL_ENV, "soon")
    with pytest.raises(ProfileError, match=STALL_ENV):
        stall_interval()
