"""PyTorch ranks on Dask: a directory of Kineto traces, one per rank, opened with `client=` names
and orders its hosts as the local open does (`distributedInfo.rank`, the file name as a
fallback, a header stating its rank after its events, ranks that cannot be told apart), and
every tool's tables equal the local ones; the Trace Viewer streams the ranks it shows. The 8
ranks are real: PARAM's DLRM on 8 V100s (tests/data/public/param)."""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_kineto_ranks import HTA, SAMPLED, _kineto
from test_pod import frames_equal

import xprof_widgets as xw
from xprof_widgets.analysis.framework_op_stats import analyze_framework_op_stats
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.overview import overview
from xprof_widgets.tools import TOOLS

distributed = pytest.importorskip("dask.distributed")
DLRM = Path(__file__).resolve().parents[1] / "data" / "public" / "param" / "dlrm_v100_8rank"
RANKS = [f"rank {r}" for r in range(8)]


@pytest.fixture(scope="module")
def cluster():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def local():
    return xw.open_profile(DLRM)


@pytest.fixture(scope="module")
def pod(cluster):
    pod = xw.open_profile(DLRM, client=cluster)
    yield pod
    pod.close()


def same_profile(pod, local) -> None:
    """The tables a PodProfile holds in the kernel equal the local Profile's."""
    assert pod.hosts == local.hosts and pod.warnings == local.warnings
    pd.testing.assert_frame_equal(pod.sections, local.sections)
    pd.testing.assert_frame_equal(pod.tracks, local.tracks)
    assert (pod.n_events, pod.duration_us, pod.clock_ps, pod.host_shifts_ps) == (
        local.n_events, local.duration_us, local.clock_ps, local.host_shifts_ps)


def test_the_ranks_are_named_and_numbered_as_locally(pod, local):
    # the listing's names ('rank 7') were refused on every worker: each opened its file alone
    assert local.hosts == RANKS
    same_profile(pod, local)


def test_every_tool_offered_gives_the_local_tables(pod, local):
    offered = {t.key for t in TOOLS if t.offered_for(local)}
    assert {"overview", "trace", "input", "framework_op_stats", "kernel_stats",
            "pod_viewer"} <= offered
    for tool in TOOLS:
        widget = getattr(xw, tool.name)
        if tool.key in offered and hasattr(widget, "to_dataframe"):
            frames_equal(widget(pod).to_dataframe(), widget(local).to_dataframe())
    a, b = xw.Overview(pod), xw.Overview(local)
    for table in ("time_breakdown", "comm_comp_overlap", "idle_time_breakdown"):
        frames_equal(getattr(a, table)(), getattr(b, table)())
    for (key, mine), theirs in zip(asdict(a.data).items(), asdict(b.data).values(), strict=True):
        if isinstance(mine, pd.DataFrame):
            frames_equal(mine, theirs)
        else:
            np.testing.assert_equal(mine, theirs, err_msg=key)  # NaN where a rank has one step
    np.testing.assert_equal(overview(pod).to_dict(), overview(local).to_dict())
    ia, ib = analyze_input_pipeline(pod), analyze_input_pipeline(local)
    frames_equal(ia.steps, ib.steps)
    pd.testing.assert_series_equal(ia.host_breakdown, ib.host_breakdown)
    frames_equal(analyze_framework_op_stats(pod).table(), analyze_framework_op_stats(local).table())


def test_the_trace_viewer_streams_the_ranks_it_shows(pod, local):
    picked = ["rank 2", "rank 5"]
    tv, tl = xw.TraceViewer(pod, hosts=picked), xw.TraceViewer(local)
    kinds = tv._summary["sections"]["kind"]
    assert sum(k == "pod-host" for k in kinds) == 6  # the others: one busy row each
    span = (0.0, local.duration_us / 2)
    shown = tv.window_data(*span, width_px=1200)["slices"]
    host = local.tracks["host"]
    assert len(shown) and set(host[shown["track"]]) == set(picked)
    tv.hosts = list(pod.hosts)
    a, b = tv.window_data(*span, width_px=1200), tl.window_data(*span, width_px=1200)
    for key in ("slices", "counters", "summaries"):
        frames_equal(a[key], b[key])
    frames_equal(shown, a["slices"][host[a["slices"]["track"]].isin(picked).to_numpy()])
    frames_equal(tv.search("nccl"), tl.search("nccl"))
    hits = tl.search("nccl")["event"].to_numpy()
    assert len(hits)
    for event in hits[::16].tolist():
        assert tv._details(event) == own_flows(tl._details(event), host)


def own_flows(details: dict, host: pd.Series) -> dict:
    """Details with the flows that stay on the event's host: a local profile of several ranks
    ties Kineto's correlation ids across ranks (each process numbers its own from 0: arrows
    between ranks that no launch made), while each worker's index sees its rank alone."""
    mine = host[details["track"]]
    return {**details, **{key: [f for f in details[key] if host[f["track"]] == mine]
                          for key in ("flows_in", "flows_out") if key in details}}


def test_a_picked_rank_is_its_own_profile_named_as_locally(pod):
    one, alone = pod.select("rank 3"), xw.open_profile(DLRM, host="rank 3")
    pd.testing.assert_frame_equal(one.tracks, alone.tracks)
    frames_equal(xw.KernelStats(one).to_dataframe(), xw.KernelStats(alone).to_dataframe())
    # tools that read events in the kernel run on the picked rank, decoded here
    assert one.local().hosts == ["rank 3"]
    frames_equal(one.events(name="^ncclKernel"), alone.events(name="^ncclKernel"))


def test_a_rank_stated_after_the_events_renames_its_host_on_the_worker(cluster, tmp_path):
    # names without ranks, ranks at the end of each header: the listing keeps the file names
    (tmp_path / "node_b_11.1.pt.trace.json.gz").write_bytes(_kineto(0, 10**18, [0.0], True))
    (tmp_path / "node_a_12.1.pt.trace.json.gz").write_bytes(_kineto(1, 10**18, [0.0, 200.0],
                                                                    True))
    local, pod = xw.open_profile(tmp_path), xw.open_profile(tmp_path, client=cluster)
    assert pod.hosts == ["rank 0", "rank 1"]
    same_profile(pod, local)
    frames_equal(xw.KernelStats(pod).to_dataframe(), xw.KernelStats(local).to_dataframe())
    tv = xw.TraceViewer(pod, hosts=pod.hosts)  # the workers hold the renamed hosts
    frames_equal(tv.search("gemm"), xw.TraceViewer(local).search("gemm"))
    pod.close()


def test_ranks_that_cannot_be_told_apart_keep_their_file_names_and_say_so(cluster, tmp_path):
    # both state rank 1 after their events, while their names say 0 and 1: the listing named
    # them 'rank 0' and 'rank 1', the headers overrule it
    source = HTA / "trace_file_list" / "inference_rank_1.json.gz"
    shutil.copyfile(source, tmp_path / "inference_rank_1.json.gz")
    shutil.copyfile(source, tmp_path / "inference_rank_0.json.gz")
    local, pod = xw.open_profile(tmp_path), xw.open_profile(tmp_path, client=cluster)
    assert pod.hosts == ["inference_rank_0", "inference_rank_1"]
    assert any("cannot be told apart" in w for w in pod.warnings)
    same_profile(pod, local)
    pod.close()


def test_traces_of_different_jobs_are_refused_on_dask_as_locally(cluster, tmp_path):
    for path in SAMPLED:
        shutil.copyfile(path, tmp_path / path.name)
    (tmp_path / "late_rank_2.json.gz").write_bytes(_kineto(2, 1_800_000_000 * 10**9, [0.0]))
    with pytest.raises(xw.ProfileError, match=r"sampled_rank-0\.json\.gz and "
                                              r"late_rank_2\.json\.gz start \d+ days apart"):
        xw.open_profile(tmp_path, client=cluster)


def test_an_open_reports_the_hosts_done(cluster):
    from xprof_widgets.pod import open_pod
    from xprof_widgets.profile.locate import find_runs

    _, runs = find_runs(str(DLRM))
    reports = []
    pod = open_pod(cluster, runs[-1].hosts, str(DLRM), progress=reports.append)
    done = [r.done for r in reports]
    assert done == sorted(done) and done[-1] == 8 and {r.total for r in reports} == {8}
    assert reports[-1].line().startswith("decoding on Dask: 8 of 8 hosts done")
    pod.close()
