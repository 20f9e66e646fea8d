"""A directory of PyTorch (Kineto) traces, one per rank, opens as one run with a host per rank:
ranks from the header's distributedInfo (file names as a fallback), clocks aligned through each
trace's baseTimeNanoseconds, a warning where ranks cannot be told apart."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.kineto import rank_of
from xprof_widgets.analysis.pod_viewer import PARTS, analyze_pod_viewer
from xprof_widgets.profile.ranks import head_rank, name_rank

HTA = Path(__file__).resolve().parents[1] / "data" / "public" / "hta"
SAMPLED = [HTA / "trace_filter" / f"sampled_rank-{r}.json.gz" for r in (0, 1)]


def _ranks_dir(tmp_path: Path) -> Path:
    for path in SAMPLED:
        shutil.copyfile(path, tmp_path / path.name)
    return tmp_path


def _kineto(rank: int | None, base_ns: int, ts: list[float], info_last: bool = False) -> bytes:
    """A small Kineto trace: a ProfilerStep on the CPU thread and a kernel under it per `ts`."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}]
    for k, t in enumerate(ts):
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1,
             "tid": 1, "ts": t, "dur": 100},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 10,
             "dur": 20},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": t + 40,
             "dur": 30, "args": {"stream": 7, "device": 0, "correlation": k + 1}}]
    doc: dict = {"schemaVersion": 1}
    info = {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}
    if rank is not None and not info_last:
        doc.update(info)
    doc["traceEvents"] = events
    if rank is not None and info_last:
        doc.update(info)
    doc["baseTimeNanoseconds"] = base_ns
    return gzip.compress(json.dumps(doc).encode())


def test_file_names_and_headers_state_ranks():
    assert name_rank("sampled_rank-0.json.gz") == 0
    assert name_rank("inference_rank_1.json.gz") == 1
    assert name_rank("/x/rank12.pt.trace.json") == 12
    assert name_rank("frank3.json") is None
    assert name_rank("host_123.1700000000.pt.trace.json.gz") is None
    assert head_rank(b'{"distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 8}') == 5
    assert head_rank(b'{"schemaVersion": 1, "traceEvents": [') is None


def test_two_ranks_of_one_job_are_one_run_with_a_host_per_rank(tmp_path):
    profile = xw.open_profile(_ranks_dir(tmp_path))
    assert profile.hosts == ["rank 0", "rank 1"]
    assert profile.warnings == []
    assert [rank_of(p) for p in profile.per_host()] == [0, 1]
    assert profile.runs["hosts"].tolist() == [["rank 0", "rank 1"]]
    one = xw.open_profile(tmp_path, host="rank 1")
    assert one.hosts == ["rank 1"] and rank_of(one) == 1


def test_the_header_says_the_rank_whatever_the_file_name(tmp_path):
    (tmp_path / "rank-7.json.gz").write_bytes(_kineto(1, 10**18, [0.0]))
    (tmp_path / "rank-6.json.gz").write_bytes(_kineto(0, 10**18, [0.0]))
    profile = xw.open_profile(tmp_path)
    assert profile.hosts == ["rank 0", "rank 1"]
    assert [Path(h.source).name for h in profile._hosts] == ["rank-6.json.gz", "rank-7.json.gz"]


def test_a_rank_stated_after_the_events_is_read_when_decoded(tmp_path):
    # tensorboard_trace_handler's names carry no rank; this header states it at the end
    (tmp_path / "node_b_11.1.pt.trace.json.gz").write_bytes(_kineto(0, 10**18, [0.0], True))
    (tmp_path / "node_a_12.1.pt.trace.json.gz").write_bytes(_kineto(1, 10**18, [0.0], True))
    profile = xw.open_profile(tmp_path)
    assert profile.hosts == ["rank 0", "rank 1"]
    assert [rank_of(p) for p in profile.per_host()] == [0, 1]


def test_ranks_are_ordered_by_number(tmp_path):
    for rank in (10, 2, 1):
        (tmp_path / f"w{rank}.pt.trace.json.gz").write_bytes(_kineto(rank, 10**18, [0.0]))
    assert xw.open_profile(tmp_path).hosts == ["rank 1", "rank 2", "rank 10"]


def test_clocks_are_aligned_through_base_time_nanoseconds(tmp_path):
    # rank 1 started its clock 250 us later: its ts 50 is rank 0's ts 300
    (tmp_path / "rank-0.json.gz").write_bytes(_kineto(0, 10**18, [300.0, 500.0]))
    (tmp_path / "rank-1.json.gz").write_bytes(_kineto(1, 10**18 + 250_000, [50.0, 260.0]))
    profile = xw.open_profile(tmp_path)
    steps = profile.events(name="^ProfilerStep")
    starts = {(row.host, row.name): row.start_us for row in steps.itertuples()}
    assert starts[("rank 0", "ProfilerStep#0")] == starts[("rank 1", "ProfilerStep#0")] == 0.0
    assert starts[("rank 1", "ProfilerStep#1")] - starts[("rank 0", "ProfilerStep#1")] == 10.0
    kernels = profile.events(name="^gemm$")
    assert sorted(kernels["start_us"].tolist()) == [40.0, 40.0, 240.0, 250.0]


def test_ranks_that_cannot_be_told_apart_keep_their_file_names_and_say_so(tmp_path):
    shutil.copyfile(SAMPLED[0], tmp_path / "a.json.gz")
    shutil.copyfile(SAMPLED[0], tmp_path / "b.json.gz")
    (tmp_path / "c.json.gz").write_bytes(_kineto(None, 1682725897226747000, [0.0]))
    profile = xw.open_profile(tmp_path)
    assert profile.hosts == ["a", "b", "c"]
    (warning,) = [w for w in profile.warnings if "ranks" in w]
    assert "cannot be told apart: rank 0 is stated by a.json.gz, b.json.gz" in warning
    assert "c.json.gz states no rank" in warning


def test_traces_of_different_jobs_are_refused_by_name(tmp_path):
    _ranks_dir(tmp_path)
    (tmp_path / "late_rank_2.json.gz").write_bytes(_kineto(2, 1_800_000_000 * 10**9, [0.0]))
    with pytest.raises(xw.ProfileError, match=r"sampled_rank-0\.json\.gz and "
                                              r"late_rank_2\.json\.gz start \d+ days apart"):
        xw.open_profile(tmp_path)


def test_traces_without_ranks_are_hosts_as_before(tmp_path):
    # JAX writes one Chrome trace per host: no rank anywhere, no warning
    for host in ("host_a", "host_b"):
        (tmp_path / f"{host}.trace.json.gz").write_bytes(_kineto(None, 10**18, [0.0]))
    profile = xw.open_profile(tmp_path)
    assert profile.hosts == ["host_a", "host_b"]
    assert not [w for w in profile.warnings if "rank" in w]


def test_the_pod_viewer_breaks_each_rank_down(tmp_path):
    analysis = analyze_pod_viewer(xw.open_profile(_ranks_dir(tmp_path)))
    assert analysis.hosts == ["rank 0", "rank 1"]
    by_host = analysis.by_host()
    assert by_host[["step", "host"]].values.tolist() == [[551, "rank 0"], [551, "rank 1"],
                                                         [552, "rank 0"], [552, "rank 1"]]
    ranks = analysis.host_breakdown()
    assert ranks["host"].tolist() == ["rank 0", "rank 1"]
    rows = analysis.rows
    for host, row in ranks.set_index("host").iterrows():
        mine = rows[rows["host"] == host]
        assert row["steps"] == 2
        assert row["duration_us"] == pytest.approx(mine["duration_us"].mean(), rel=1e-15)
        assert sum(row[p] for p in PARTS) == pytest.approx(row["duration_us"], rel=1e-12)


def test_a_header_that_contradicts_the_file_names_is_believed(tmp_path):
    # trace_file_list's trace states rank 1 after its events; a copy named rank_0 states it too
    source = HTA / "trace_file_list" / "inference_rank_1.json.gz"
    assert xw.open_profile(source).hosts == ["inference_rank_1"]  # one file: named by its file
    shutil.copyfile(source, tmp_path / "inference_rank_1.json.gz")
    shutil.copyfile(source, tmp_path / "inference_rank_0.json.gz")
    listed = xw.open_profile(tmp_path)
    assert listed.hosts == ["inference_rank_0", "inference_rank_1"]
    (warning,) = [w for w in listed.warnings if "ranks" in w]
    assert "rank 1 is stated by inference_rank_0.json.gz, inference_rank_1.json.gz" in warning
