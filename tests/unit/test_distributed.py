"""The Distributed view: per-rank GPU time, collectives' bandwidth (nccl-tests' formulas) and
skew across ranks, on a two-rank run made here (every figure counted by hand) and on PARAM's
8-rank DLRM run on V100s (tests/data/public/param), locally and on Dask."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.distributed import (
    RANK_PARTS,
    analyze_distributed,
    distributed_available,
)
from xprof_widgets.analysis.kineto.collectives import bus_factor, collective_kind, element_bytes
from xprof_widgets.analysis.kineto.gpu_time import comm_comp_overlap
from xprof_widgets.tools import offered
from xprof_widgets.widgets.distributed import report, summary

DATA = Path(__file__).resolve().parents[1] / "data"
DLRM = DATA / "public" / "param" / "dlrm_v100_8rank"
BASE_NS = 1_700_000_000_000_000_000
NCCL_ARGS = {"Process Group Name": "0", "Process Group Ranks": "[0, 1]", "Group size": 2}


def _kernel(name: str, ts: float, dur: float, stream: int, corr: int, **args) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
            "dur": dur, "args": {"stream": stream, "device": 0, "correlation": corr, **args}}


def _host(cat: str, name: str, ts: float, dur: float, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": args}


def _launch(ts: float, corr: int) -> dict:
    return _host("cuda_runtime", "cudaLaunchKernel", ts, 1, correlation=corr)


def _rank(rank: int, events: list[dict]) -> bytes:
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank,
                                                   "world_size": 2},
           "baseTimeNanoseconds": BASE_NS, "traceEvents": [
               {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
               {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}},
               {"ph": "M", "name": "process_labels", "pid": 0, "args": {"labels": "GPU 0"}},
               *events]}
    return gzip.compress(json.dumps(doc).encode())


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    """Rank 0 computes 0-50 us and joins the all-reduce at 40 (its kernel ends with rank 1's
    at 200), the all-gather at 300; rank 1 computes 0-90, joins at 100 and 305. Rank 0's kernels
    state their collective in their args (PyTorch 2.1+); rank 1's in the record_param_comms op
    around the launch (all-reduce), and for the all-gather its group in that op and its size
    only in the nccl:all_gather annotation around it (older traces)."""
    folder = tmp_path_factory.mktemp("ranks")
    (folder / "rank-0.pt.trace.json.gz").write_bytes(_rank(0, [
        _launch(-5, 1), _kernel("gemm_kernel", 0, 50, 7, 1),
        _launch(30, 2),
        _kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 40, 160, 20, 2, **NCCL_ARGS,
                **{"Collective name": "allreduce", "In msg nelems": 1_000_000,
                   "Out msg nelems": 1_000_000, "dtype": "Float"}),
        _launch(290, 3),
        _kernel("ncclDevKernel_AllGather_RING_LL", 300, 10, 20, 3, **NCCL_ARGS,
                **{"Collective name": "_allgather_base", "In msg nelems": 100,
                   "Out msg nelems": 200, "dtype": "Float"})]))
    (folder / "rank-1.pt.trace.json.gz").write_bytes(_rank(1, [
        _launch(-5, 11), _kernel("gemm_kernel", 0, 90, 7, 11),
        _host("cpu_op", "record_param_comms", 80, 15, **NCCL_ARGS,
              **{"Collective name": "allreduce", "In msg nelems": 1_000_000,
                 "Out msg nelems": 1_000_000, "dtype": "Float"}),
        _launch(85, 12),
        _kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 100, 100, 20, 12),
        _host("user_annotation", "nccl:all_gather", 280, 15, **{"Input Dims": [[100]],
                                                               "Input type": ["float"]}),
        _host("cpu_op", "record_param_comms", 282, 10, **NCCL_ARGS,
              **{"Collective name": "_allgather_base"}),
        _launch(285, 13),
        _kernel("ncclKernel_AllGather_RING_LL_Sum_float", 305, 5, 20, 13)]))
    return folder


@pytest.fixture(scope="module")
def hand(two_ranks):
    return analyze_distributed(xw.open_profile(two_ranks))


def test_each_rank_splits_its_kernel_time_by_hand(hand):
    ranks = hand.ranks.set_index("rank")
    # rank 0: work 0-310; compute 0-50, communication 40-200 and 300-310, both at 40-50
    # rank 1: compute 0-90, communication 100-200 and 305-310, never both
    expected = {0: [310, 40, 10, 160, 0, 100], 1: [310, 90, 0, 105, 0, 115]}
    for rank, (kernel, *parts) in expected.items():
        row = ranks.loc[rank]
        assert row["kernel_us"] == kernel
        assert row[list(RANK_PARTS)].tolist() == parts
        assert sum(parts) == kernel
    assert ranks["comp_comm_overlap_pctg"].tolist() == [100 * 10 / 170, 0.0]
    assert ranks["waiting_us"].tolist() == [65.0, 0.0]  # 60 in the all-reduce, 5 in the gather


def test_sizes_kinds_and_groups_from_every_place_a_trace_states_them(hand):
    rows = hand.instances.sort_values(["rank", "start_us"])
    assert rows["kind"].tolist() == ["all_reduce", "all_gather"] * 2
    # all-gather: S is its output, 200 floats; rank 1's annotation states the input, 100
    assert rows["size_bytes"].tolist() == [4e6, 800.0] * 2
    assert rows["group"].tolist() == ["0"] * 4 and rows["group_size"].tolist() == [2] * 4
    assert rows["group_ranks"].tolist() == ["[0,1]"] * 4  # rank 1's from the op
    assert set(rows["family"]) == {"NCCL"}


def test_bandwidth_is_nccl_tests_algbw_and_busbw_by_hand(hand):
    kinds = hand.by_kind().set_index("kind")
    reduce, gather = kinds.loc["all_reduce"], kinds.loc["all_gather"]
    assert (reduce["count"], reduce["ranks"], reduce["total_us"]) == (2, 2, 260.0)
    assert reduce["algbw_gbps"] == pytest.approx(8e6 / 260e3)  # bytes / ns = GB/s
    assert reduce["busbw_gbps"] == pytest.approx(8e6 / 260e3 * 2 * (2 - 1) / 2)
    assert gather["algbw_gbps"] == pytest.approx(1600 / 15e3)
    assert gather["busbw_gbps"] == pytest.approx(1600 / 15e3 * (2 - 1) / 2)
    assert (reduce["wait_us"], gather["wait_us"]) == (60.0, 5.0)
    assert reduce["mean_size_mib"] == pytest.approx(4e6 / 2**20)


def test_skew_matches_the_ith_collective_of_a_group_across_ranks(hand):
    skew = hand.skew()
    assert skew["kind"].tolist() == ["all_reduce", "all_gather"]
    assert skew["spread_us"].tolist() == [60.0, 5.0]
    assert skew["last_rank"].tolist() == [1, 1]
    assert skew["wait_caused_us"].tolist() == [60.0, 5.0]
    assert skew["end_spread_us"].tolist() == [0.0, 0.0]  # one clock: they end together
    assert skew["complete"].all() and hand.mismatched == 0
    # once both arrived, the all-reduce took rank 1's 100 us: 4e6 B / 100 us = 40 GB/s
    assert skew["busbw_no_wait_gbps"].tolist() == pytest.approx([40.0, 800 / 5e3 / 2])
    stragglers = hand.stragglers().set_index("rank")
    assert stragglers["last_arrivals"].tolist() == [0, 2]
    assert stragglers["wait_caused_us"].tolist() == [0.0, 65.0]
    assert stragglers["wait_caused_pct"].tolist() == [0.0, 100.0]
    assert stragglers["mean_late_us"].tolist() == [0.0, 32.5]


def test_a_stated_sequence_number_matches_instead_of_the_order():
    from xprof_widgets.analysis.distributed import _match

    rows = pd.DataFrame({"rank": [0, 0, 1, 1], "host": ["a", "a", "b", "b"],
                         "kind": ["all_reduce"] * 4,
                         "group": ["0"] * 4, "group_ranks": [""] * 4, "seq": [7, 8, 8, 9]})
    # rank 1's trace starts one collective later: order would pair 7 with 8
    assert _match(rows).tolist() == [0, 1, 1, 2]
    assert _match(rows.assign(seq=-1)).tolist() == [0, 1, 0, 1]
    sends = rows.assign(kind="send_recv")
    assert _match(sends).tolist() == [-1] * 4  # point to point: not matched


def test_collectives_the_ranks_disagree_on_are_left_unmatched():
    from xprof_widgets.analysis.distributed import _instances

    # the ranks disagree on the first collective of the group (no Seq stated); the second is
    # an all-to-all on both, whose sizes may differ by rank (uneven splits)
    rows = pd.DataFrame({
        "rank": [0, 0, 1, 1], "kind": ["all_reduce", "all_to_all", "all_gather", "all_to_all"],
        "family": "NCCL", "group": "0", "group_ranks": "", "group_size": 2, "seq": -1,
        "start_ps": [0, 20, 11, 22], "end_ps": [5, 25, 15, 25],
        "size_bytes": [8.0, 4.0, 16.0, 6.0], "dtype": "Float", "name": "k",
        "track": 0, "in_track": 0, "host": ["rank 0"] * 2 + ["rank 1"] * 2, "event": 0})
    instances, mismatched = _instances(rows)
    assert mismatched == 1
    assert instances["instance"].tolist() == [-1, 1, -1, 1]
    assert instances["waited_us"].tolist() == [0.0, 2e-6, 0.0, 0.0]


def test_sampled_ranks_of_a_128_rank_job_are_incomplete_and_partly_mismatched():
    # HTA's trace_filter: 2 of 128 ranks, each trace filtered: collectives do not line up
    a = analyze_distributed(xw.open_profile(DATA / "public" / "hta" / "trace_filter"))
    skew = a.skew()
    assert a.mismatched > 0 and len(skew) + a.mismatched == 10
    assert not skew["complete"].any()
    json.dumps(report(a), allow_nan=False)


def test_traces_stating_one_rank_stay_apart(two_ranks, tmp_path):
    # two captures of rank 0: hosts named by their files (profile/ranks.py), matched as two
    for name in ("first.pt.trace.json.gz", "second.pt.trace.json.gz"):
        (tmp_path / name).write_bytes((two_ranks / "rank-0.pt.trace.json.gz").read_bytes())
    a = analyze_distributed(xw.open_profile(tmp_path))
    assert a.ranks["rank"].tolist() == [0, 0] and a.ranks["host"].nunique() == 2
    skew = a.skew()
    assert skew["ranks"].tolist() == [2, 2] and skew["spread_us"].tolist() == [0.0, 0.0]
    assert a.stragglers()["instances"].tolist() == [2, 2]


def test_kinds_element_sizes_and_bus_factors():
    names = {"ncclDevKernel_AllGather_RING_LL": "all_gather", "nccl:all_to_all": "all_to_all",
             "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t": "send_recv",
             "reduce_scatter_tensor_coalesced": "reduce_scatter", "_allgather_base": "all_gather",
             "allreduce": "all_reduce", "ncclKernel_Reduce_RING_LL_Sum_float": "reduce",
             "deep_ep::intranode::dispatch<8>": "all_to_all",
             "multimem_all_reduce_kernel": "all_reduce",
             "cross_device_reduce_1stage": "all_reduce", "broadcast": "broadcast",
             "ncclDevKernel_Generic_4": "other"}
    assert {n: collective_kind(n) for n in names} == names
    assert collective_kind("") is None
    assert [element_bytes(t) for t in ("Float", "c10::BFloat16", "long int", "Byte",
                                       "c10::Float8_e4m3fn", "mystery")] == [4, 2, 8, 1, 1, None]
    assert [bus_factor(k, 8) for k in ("all_reduce", "all_gather", "reduce_scatter",
                                       "all_to_all", "broadcast", "send_recv")] == [
        1.75, 0.875, 0.875, 0.875, 1.0, 1.0]
    assert math.isnan(bus_factor("barrier", 8)) and math.isnan(bus_factor("all_reduce", 0))


@pytest.fixture(scope="module")
def dlrm():
    return xw.open_profile(DLRM)


def test_dlrm_ranks_collectives_and_skew(dlrm):
    a = analyze_distributed(dlrm)
    ranks = a.ranks
    assert ranks["host"].tolist() == [f"rank {r}" for r in range(8)]
    np.testing.assert_allclose(ranks[list(RANK_PARTS)].sum(axis=1), ranks["kernel_us"])
    hta = comm_comp_overlap(dlrm)  # equal to HTA 0.5 (tests/differential/test_hta_parity.py)
    pd.testing.assert_frame_equal(ranks[list(hta.columns)], hta)
    kinds = a.by_kind().set_index("kind")
    assert kinds["count"].to_dict() == {"all_to_all": 40, "all_reduce": 24}
    assert set(kinds["group_size"]) == {8}  # distributedInfo.world_size: no group stated
    sizes = a.instances[a.instances["rank"] == 0]["size_bytes"].tolist()
    # nccl:all_to_all / nccl:all_reduce Input Dims x float (4 B), long int (8 B), int (4 B)
    assert sizes == [6144 * 4, 24 * 8, 384 * 4, 3392 * 4, 394241 * 4, 6144 * 4, 112 * 4,
                     226960 * 4]
    skew = a.skew()
    assert len(skew) == 8 and skew["complete"].all() and a.mismatched == 0
    assert (skew["end_spread_us"] <= 10).all()  # the ranks' clocks agree
    assert skew["spread_us"].iat[0] == 7624.0  # the first all-to-all: rank 7 came 7.6 ms late
    stragglers = a.stragglers().sort_values("wait_caused_us", ascending=False)
    assert stragglers["host"].iat[0] == "rank 7" and stragglers["last_arrivals"].iat[0] == 5
    assert stragglers["last_arrivals"].sum() == 8


def test_a_rank_whose_collectives_fail_keeps_its_split_and_says_so(two_ranks, tmp_path,
                                                                   monkeypatch):
    import shutil

    from xprof_widgets.analysis import distributed

    def broken(profile):
        if profile.hosts == ["rank 1"]:
            raise ValueError("injected")
        return real(profile)

    real = distributed.collective_part
    monkeypatch.setattr(distributed, "collective_part", broken)
    folder = shutil.copytree(two_ranks, tmp_path / "ranks")  # a profile of its own
    profile = xw.open_profile(folder)
    a = analyze_distributed(profile)
    assert a.ranks["rank"].tolist() == [0, 1] and set(a.instances["rank"]) == {0}
    assert len(a.skew()) == 2  # rank 0's, alone
    note = (f"{profile.per_host()[1].source}: its collectives are left out of the Distributed "
            "view (ValueError: injected).")
    assert [w for w in profile.warnings if "Distributed" in w] == [note]


def test_offered_only_with_collectives_or_ranks(dlrm, two_ranks):
    assert "distributed" in [t.key for t in offered(dlrm)]
    assert distributed_available(xw.open_profile(two_ranks))
    for path in (DATA / "jax_cpu_demo.xplane.pb", DATA / "torch_tiny_mlp.pt.trace.json.gz",
                 DATA / "synthetic_gpu.xplane.pb"):
        assert not distributed_available(xw.open_profile(path)), path


def test_widget_faces_and_report(dlrm):
    dv = xw.DistributedView(dlrm)
    assert dv.to_dataframe()["rank"].tolist() == list(range(8))
    assert len(dv.instances()) == 64 and len(dv.skew()) == 8
    r = report(dv.analysis)
    json.dumps(r, allow_nan=False)
    assert set(r["charts"]) == {"ranks", "stragglers"}
    assert dv._summary["straggler"] == "rank 7" and dv._summary["matched"] == 8
    assert dv._summary["source"].startswith(str(DLRM)) and "message" not in summary(dv.analysis)
    empty = report(analyze_distributed(xw.open_profile(DATA / "jax_cpu_demo.xplane.pb")))
    assert "message" in empty


def test_the_trace_viewer_selects_one_collective_on_every_rank(dlrm):
    dv = xw.DistributedView(dlrm)
    first = dv.collective(0)
    assert first["host"].tolist() == [f"rank {r}" for r in range(8)]
    tv = xw.TraceViewer(dlrm)
    tv.show(first)
    assert sorted(tv.selected_events) == sorted(first["event"].tolist())
    chosen = tv.selection
    assert chosen["name"].str.startswith("ncclKernel_SendRecv_RING_SIMPLE").all()
    lo, hi = tv.window  # the view spans every rank's kernel: 7.6 ms of arrivals, one clock
    assert lo <= first["start_us"].min() and hi >= (first["start_us"] + first["duration_us"]).max()


def test_instances_name_their_kernel_events(dlrm):
    rows = analyze_distributed(dlrm).instances
    names = dlrm.metadata["name"].to_numpy(object)[dlrm.meta[rows["event"].to_numpy()]]
    assert names.tolist() == rows["name"].tolist()
    assert (dlrm.start_ps[rows["event"].to_numpy()] / 1e6 == rows["start_us"]).all()


def test_a_pod_on_dask_gives_the_local_tables(dlrm):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        pod = xw.open_profile(DLRM, client=client)
        try:
            a, b = analyze_distributed(pod), analyze_distributed(dlrm)
            pd.testing.assert_frame_equal(a.ranks, b.ranks)
            pd.testing.assert_frame_equal(a.instances, b.instances)
            pd.testing.assert_frame_equal(a.skew(), b.skew())
            assert distributed_available(pod)
            tv = xw.TraceViewer(pod)  # streams the ranks one collective ran on: all eight
            tv.show(xw.DistributedView(pod).collective(0))
            assert tv.hosts == pod.hosts and len(tv.selected_events) == 8
        finally:
            pod.close()
