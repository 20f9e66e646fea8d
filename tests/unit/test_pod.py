"""Pod-scale runs on Dask: a 16-host synthetic run opened on a LocalCluster of processes gives the
same tables as the same run opened locally, every tool works on it, and failures are named."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.framework_op_stats import analyze_framework_op_stats
from xprof_widgets.analysis.hlo_stats import hlo_stats
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.analysis.overview import overview
from xprof_widgets.analysis.roofline_model import analyze_roofline_model
from xprof_widgets.pod.profile import next_to
from xprof_widgets.synthetic import write_synthetic

distributed = pytest.importorskip("dask.distributed")
cloudpickle = pytest.importorskip("cloudpickle")
HOSTS = 16


@pytest.fixture(scope="module")
def cluster():
    import dask

    # one retry for a task whose worker dies, so a host that kills workers fails fast
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    client = distributed.Client(cluster)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return write_synthetic(tmp_path_factory.mktemp("pod"), 16 * 6000, "tpu", hosts=HOSTS)


@pytest.fixture(scope="module")
def local(run_dir):
    return xw.open_profile(run_dir)


@pytest.fixture(scope="module")
def pod(run_dir, cluster):
    pod = xw.open_profile(run_dir, client=cluster)
    yield pod
    pod.close()


def frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                  check_dtype=False)


def test_the_pod_numbers_everything_as_the_local_profile(pod, local):
    assert type(pod).__name__ == "PodProfile" and len(pod.hosts) == HOSTS
    assert pod.hosts == local.hosts
    pd.testing.assert_frame_equal(pod.sections, local.sections)
    pd.testing.assert_frame_equal(pod.tracks, local.tracks)
    pd.testing.assert_frame_equal(pod.hlo_modules, local.hlo_modules)
    assert (pod.n_events, pod.duration_us, pod.clock_ps) == (local.n_events, local.duration_us,
                                                             local.clock_ps)
    assert pod.host_shifts_ps == local.host_shifts_ps
    assert xw.open_profile(pod) is pod


def test_analyses_over_every_host_equal_the_local_ones(pod, local):
    a, b = analyze_op_profile(pod), analyze_op_profile(local)
    frames_equal(a.to_dataframe(), b.to_dataframe())
    assert a.overview() == b.overview()
    frames_equal(a.table(group_by="program"), b.table(group_by="program"))
    fused = int(a.ops.index[a.ops["fused"]][0])
    frames_equal(a.fused_ops(fused), b.fused_ops(fused))
    ia, ib = analyze_input_pipeline(pod), analyze_input_pipeline(local)
    frames_equal(ia.steps, ib.steps)
    frames_equal(ia.input_ops, ib.input_ops)
    pd.testing.assert_series_equal(ia.host_breakdown, ib.host_breakdown)
    frames_equal(ia.step_markers.markers, ib.step_markers.markers)
    assert overview(pod).to_dict() == overview(local).to_dict()
    fa, fb = analyze_framework_op_stats(pod), analyze_framework_op_stats(local)
    frames_equal(fa.table(), fb.table())
    frames_equal(hlo_stats(pod), hlo_stats(local))  # breakdowns read on each host's worker
    ra, rb = analyze_roofline_model(pod), analyze_roofline_model(local)
    assert ra.steps == rb.steps > 0  # every host's steps tallied next to its events
    frames_equal(ra.table, rb.table)


def test_the_widgets_give_the_local_dataframes(pod, local):
    frames_equal(xw.OpProfile(pod).to_dataframe(), xw.OpProfile(local).to_dataframe())
    frames_equal(xw.InputPipeline(pod).to_dataframe(), xw.InputPipeline(local).to_dataframe())
    mp, ml = xw.MemoryViewer(pod), xw.MemoryViewer(local)
    frames_equal(mp.to_dataframe(), ml.to_dataframe())
    frames_equal(mp.timeline(), ml.timeline())
    assert mp.summary == ml.summary
    frames_equal(xw.HloStats(pod).to_dataframe(), xw.HloStats(local).to_dataframe())
    frames_equal(xw.RooflineModel(pod).to_dataframe(), xw.RooflineModel(local).to_dataframe())
    suite = xw.Profiler(pod)
    assert {"overview", "trace", "op", "memory", "input", "hlo_stats", "roofline"} <= set(
        suite.tab_keys)
    assert suite.host_picker.options[1:] == tuple(pod.hosts)


def test_the_trace_viewer_asks_the_workers_and_answers_as_locally(pod, local):
    tv, tl = xw.TraceViewer(pod, hosts=pod.hosts), xw.TraceViewer(local)
    assert isinstance(tv, xw.TraceViewer) and type(tv.index).__name__ == "PodTrace"  # one class
    span = (0.0, local.duration_us / 3)
    a, b = tv.window_data(*span, width_px=1200), tl.window_data(*span, width_px=1200)
    for key in ("slices", "counters", "summaries"):
        frames_equal(a[key], b[key])
    frames_equal(tv.search("fusion.1"), tl.search("fusion.1"))
    hits = tl.search("fusion.1")["event"].to_numpy()
    assert tv._details(int(hits[7])) == tl._details(int(hits[7]))
    tv.selected_events = tl.selected_events = hits[:400].tolist()
    frames_equal(tv.selection, tl.selection)
    frames_equal(tv.selection_pivot(), tl.selection_pivot())
    frames_equal(tv.selection_pivot(("name",)), tl.selection_pivot(("name",)))
    frames_equal(pd.DataFrame(tv._aggregate(hits[:400].tolist())["rows"]),
                 pd.DataFrame(tl._aggregate(hits[:400].tolist())["rows"]))
    rows = [[int(t), 0, 3] for t in local.tracks.index[local.tracks["name"] == "XLA Ops"][::5]]
    assert tv._select_box(*span, rows) == tl._select_box(*span, rows)
    frames_equal(tv.events(0, 2000, "XLA Modules"), tl.events(0, 2000, "XLA Modules"))


def test_hosts_not_picked_are_one_busy_row_each(pod, local):
    tv = xw.TraceViewer(pod)
    summary = tv._summary
    assert summary["pod"]["picked"] == []
    rows = [s for s, k in zip(summary["sections"]["id"], summary["sections"]["kind"],
                              strict=True) if k == "pod-host"]
    assert len(rows) == HOSTS == len(summary["sections"]["id"])
    content, buffers = tv._window(0.0, local.duration_us, 800, tracks=[], collapsed=rows[:3])
    assert [s for s, _ in content["summaries"]] == rows[:3]
    starts = np.frombuffer(buffers[12], np.float32)
    assert starts.shape[0] == sum(n for _, n in content["summaries"]) > 0
    tv.hosts = pod.hosts[:3]
    assert tv._summary["pod"]["picked"] == pod.hosts[:3]
    assert sum(k == "pod-host" for k in tv._summary["sections"]["kind"]) == HOSTS - 3
    with pytest.raises(Exception, match="no host"):
        tv.hosts = ["nope"]


def test_host_tasks_stay_on_the_worker_holding_the_host(pod, cluster):
    """A Profile does not travel between workers, so every task reading a host is bound to the
    worker that holds it (not loosely: Dask steals a queued task for an idle worker, which then
    waited for the host forever, the stalls seen on loaded machines)."""
    holders = cluster.who_has([h.future for h in pod._pod_hosts])
    futures = [next_to(cluster, len_of_tracks, h.future, key=f"test-next-to-{h.file.host}")
               for h in pod._pod_hosts]

    assert [f.result() for f in futures] == [len(h.summary.tracks) for h in pod._pod_hosts]
    bound = cluster.run_on_scheduler(restrictions, [f.key for f in futures])
    for h, future in zip(pod._pod_hosts, futures, strict=True):
        assert bound[future.key] == (sorted(holders[h.future.key]), False)


def len_of_tracks(profile) -> int:
    return len(profile.tracks)


def restrictions(keys: list[str], dask_scheduler) -> dict:
    """The workers each task is bound to, and whether loosely (run on the scheduler)."""
    return {k: (sorted(dask_scheduler.tasks[k].worker_restrictions or ()),
                dask_scheduler.tasks[k].loose_restrictions) for k in keys}


def test_a_picked_host_is_its_own_profile(pod, run_dir):
    host = pod.hosts[5]
    one, alone = pod.select(host), xw.open_profile(run_dir, host=host)
    pd.testing.assert_frame_equal(one.tracks, alone.tracks)
    frames_equal(analyze_op_profile(one).to_dataframe(), analyze_op_profile(alone).to_dataframe())
    frames_equal(analyze_input_pipeline(one).steps, analyze_input_pipeline(alone).steps)
    assert one.n_events == alone.n_events
    # tools that read events in the kernel run on the picked host (decoded here)
    assert one.metadata.shape == alone.metadata.shape
    with pytest.raises(xw.ProfileError, match="pick one host"):
        pod.metadata  # noqa: B018


def test_a_host_that_cannot_be_decoded_is_named(run_dir, cluster, tmp_path):
    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad)
    victim = sorted(bad.glob("*.xplane.pb"))[2]
    victim.write_bytes(b"\x0a\xff\xff\xff\xff\x0f junk")
    with pytest.raises(xw.ProfileError, match=victim.name.removesuffix(".xplane.pb")):
        xw.open_profile(bad, client=cluster)


def test_waits_are_bounded(run_dir, cluster):
    from xprof_widgets.pod import open_pod
    from xprof_widgets.profile.locate import find_runs

    _, runs = find_runs(str(run_dir))
    with pytest.raises(xw.ProfileError, match="did not finish within"):
        open_pod(cluster, runs[-1].hosts, str(run_dir), timeout_s=0.01)


def _exit_on(profile, host: str) -> int:
    if profile.hosts == [host]:
        os._exit(1)
    return 0


def test_a_host_that_kills_its_worker_is_named(pod, monkeypatch):
    """The task is bound to the worker holding its host (next_to), so when it kills that
    worker it cannot run elsewhere: the wait stops within the stall interval, naming the hosts
    left without their worker."""
    monkeypatch.setenv("XPROF_WIDGETS_DASK_STALL_S", "10")
    with pytest.raises(xw.ProfileError, match=f"exit on stopped: .*{pod.hosts[3]} "
                                              r"\(its worker is gone\)"):
        pod.map_hosts(_exit_on, pod.hosts[3])


def test_a_dead_workers_hosts_are_decoded_again(pod, run_dir, cluster):
    tv = xw.TraceViewer(pod, hosts=pod.hosts[:2])
    before = tv.window_data(0, 5000)["slices"]
    holder = next(iter(cluster.who_has([pod._pod_hosts[0].future]).values()))[0]
    cluster.run(os._exit, 1, workers=[holder], on_error="ignore")
    frames_equal(tv.window_data(0, 5000)["slices"], before)  # its actor is made again
    four = pod.hosts[:4]
    frames_equal(analyze_op_profile(pod.select(four)).to_dataframe(),
                 analyze_op_profile(xw.open_profile(run_dir, host=four)).to_dataframe())


def test_the_magic_opens_a_run_on_a_scheduler(run_dir, cluster, local):
    from IPython.core.interactiveshell import InteractiveShell

    from xprof_widgets.magics import XprofMagics, dask_client

    magics = XprofMagics(InteractiveShell.instance())
    address = cluster.scheduler.address
    widget = magics._line(f"{run_dir} --dask {address} --tool op")
    assert type(widget.profile).__name__ == "PodProfile"
    frames_equal(widget.to_dataframe(), xw.OpProfile(local).to_dataframe())
    widget.profile.close()
    with pytest.raises(xw.ProfileError, match="no Dask scheduler answers"):
        dask_client("tcp://127.0.0.1:9", timeout_s=1)


def test_a_gpu_pod_lists_its_kernels_as_the_local_run(cluster, tmp_path):
    run = write_synthetic(tmp_path, 4 * 8000, "gpu", hosts=4)
    pod, local = xw.open_profile(run, client=cluster), xw.open_profile(run)
    frames_equal(xw.KernelStats(pod).to_dataframe(), xw.KernelStats(local).to_dataframe())
    frames_equal(xw.FrameworkOpStats(pod).to_dataframe(),
                 xw.FrameworkOpStats(local).to_dataframe())
    frames_equal(xw.OpProfile(pod).to_dataframe(), xw.OpProfile(local).to_dataframe())
    pod.close()


def test_hta_face_on_a_pod_answers_and_writes_as_locally(cluster, tmp_path):
    """HTA's interface over the ranks of a Kineto job decoded on the workers: the queue
    series and the traces written with counters equal the local run's; the critical path,
    which reads a rank's events in the kernel, is refused naming the way out."""
    import gzip
    import json

    from xprof_widgets.hta_face import TraceAnalysis
    from xprof_widgets.pod.profile import NotDistributed

    source = Path(__file__).resolve().parents[1] / "data" / "public" / "hta" / "trace_filter"
    on_pod, here = tmp_path / "pod", tmp_path / "local"
    for folder in (on_pod, here):
        shutil.copytree(source, folder)
    pod = TraceAnalysis(trace_dir=xw.open_profile(on_pod, client=cluster))
    local = TraceAnalysis(trace_dir=str(here))
    theirs, ours = (a.get_queue_length_time_series([0, 1]) for a in (local, pod))
    for rank in (0, 1):
        frames_equal(ours[rank], theirs[rank])
    written = [pod.generate_trace_with_counters(ranks=[0, 1]),
               local.generate_trace_with_counters(ranks=[0, 1])]
    for mine, want in zip(*written, strict=True):
        assert Path(mine).name == Path(want).name
        counters = [[e for e in json.loads(gzip.decompress(Path(p).read_bytes()))["traceEvents"]
                     if e.get("ph") == "C"] for p in (mine, want)]
        assert counters[0] and counters[0] == counters[1]
    with pytest.raises(NotDistributed, match="pick one host"):
        pod.critical_path_analysis(rank=0, annotation="", instance_id=None)
    pod.profile.close()
