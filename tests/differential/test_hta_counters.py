"""`TraceAnalysis.generate_trace_with_counters` against HTA 0.5's, run live on public traces:
the same counter events (docs/from_hta.md: INSTANT_ORDER, COUNTERS_FIRST, FILE_AS_WRITTEN),
every event of the trace kept, and the file opens here with a track per counter series."""

from __future__ import annotations

import gzip
import json
import math
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.errors import ProfileError
from xprof_widgets.hta_face import TimeSeriesTypes, TraceAnalysis

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public" / "hta"
TRACES = {  # a folder's traces as one job, and the ranks asked for
    "simple_add": (["critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"],
                   [0]),
    "ns_resolution": (["ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"], [0]),
    "two_ranks": (["trace_filter/sampled_rank-0.json.gz", "trace_filter/sampled_rank-1.json.gz"],
                  [0, 1]),
}


def _job(tmp_path: Path, name: str, files: list[str]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for f in files:
        shutil.copy(PUBLIC / f, folder)
    return folder


def _events(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def _series(events: list[dict], whole_us: bool = False) -> dict[tuple, dict[float, float]]:
    """Each counter series (name, id, pid, arg) as its value after each instant: at one instant
    HTA's steps come in any order (INSTANT_ORDER), the value after the last of them does not.
    whole_us: a queue's instants (each a start) rounded up to the microsecond, as HTA rounds
    the starts of a trace with ns in its `ts` (WHOLE_MICROSECONDS)."""
    out: dict[tuple, dict[float, float]] = defaultdict(dict)
    for e in events:
        if e.get("ph") == "C":
            (key, value), = e["args"].items()
            ts = math.ceil(e["ts"]) if whole_us else float(e["ts"])
            out[(e["name"], e.get("id"), e["pid"], key)][ts] = value
    return out


@pytest.fixture(scope="module")
def hta():
    pytest.importorskip("hta")
    from hta.trace_analysis import TraceAnalysis as HtaAnalysis
    return HtaAnalysis


@pytest.mark.parametrize("name", sorted(TRACES))
def test_counters_equal_htas_and_the_trace_is_kept(name, hta, tmp_path):
    files, ranks = TRACES[name]
    theirs, ours = _job(tmp_path, "hta", files), _job(tmp_path, "ours", files)
    hta(trace_dir=str(theirs)).generate_trace_with_counters(ranks=ranks)
    written = TraceAnalysis(trace_dir=str(ours)).generate_trace_with_counters(ranks=ranks)
    assert sorted(Path(p).name for p in written) == sorted(
        p.name for p in theirs.glob("*_with_counters.json.gz"))
    for path in map(Path, written):
        mine, htas = _events(path), _events(theirs / path.name)
        whole_us = name == "ns_resolution"
        want = _series(htas["traceEvents"])
        got = _series(mine["traceEvents"], whole_us)
        assert want and got.keys() == want.keys()
        for key, steps in want.items():
            if whole_us and key[0] != "Queue Length":
                continue  # a copy's end is floored by HTA, its start rounded up: not compared
            assert got[key].keys() == steps.keys(), key
            assert all(math.isclose(got[key][t], v, rel_tol=1e-9, abs_tol=1e-9)
                       for t, v in steps.items()), key
        original = _events(ours / path.name.replace("_with_counters", ""))
        kept = [e for e in mine["traceEvents"] if e.get("ph") != "C"]
        assert kept == [e for e in original["traceEvents"] if e.get("ph") != "C"]
        assert {k: v for k, v in mine.items() if k != "traceEvents"} == \
               {k: v for k, v in original.items() if k != "traceEvents"}
        # Read here: one counter track per stream's queue and per kind of copy.
        tracks = set(xw.open_profile(path).tracks["name"])
        assert {f"Queue Length id: {k[1]}" for k in want if k[0] == "Queue Length"} <= tracks
        assert {k[0] for k in want if k[0] != "Queue Length"} <= tracks


def test_one_kind_of_counter_and_a_suffix(tmp_path):
    folder = _job(tmp_path, "one", TRACES["simple_add"][0])
    analysis = TraceAnalysis(trace_dir=str(folder))
    [path] = analysis.generate_trace_with_counters(TimeSeriesTypes.QUEUE_LENGTH,
                                                   output_suffix="_queues")
    assert path.endswith("_trace_queues.json.gz")
    names = {e["name"] for e in _events(Path(path))["traceEvents"] if e.get("ph") == "C"}
    assert names == {"Queue Length"}


def test_hta_own_flag_is_read_by_name(hta, tmp_path):
    from hta.trace_analysis import TimeSeriesTypes as HtaTypes

    folder = _job(tmp_path, "flag", TRACES["simple_add"][0])
    [path] = TraceAnalysis(trace_dir=str(folder)).generate_trace_with_counters(
        HtaTypes.MEMCPY_BANDWIDTH)
    names = {e["name"] for e in _events(Path(path))["traceEvents"] if e.get("ph") == "C"}
    assert names and "Queue Length" not in names


def test_a_plain_json_trace_is_written_plain_and_a_trace_without_launches_gets_no_file(
        tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    source = PUBLIC / TRACES["simple_add"][0][0]
    (folder / "trace.json").write_bytes(gzip.decompress(source.read_bytes()))
    [path] = TraceAnalysis(trace_dir=str(folder)).generate_trace_with_counters()
    assert path.endswith("trace_with_counters.json")
    assert any(e.get("ph") == "C" for e in json.loads(Path(path).read_text())["traceEvents"])
    cpu = _job(tmp_path, "cpu", ["cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"])
    assert TraceAnalysis(trace_dir=str(cpu)).generate_trace_with_counters(ranks=[34]) == []
    assert not list(cpu.glob("*_with_counters*"))


def test_a_trace_that_is_its_events_array_alone_gets_them_too(tmp_path):
    folder = tmp_path / "list"
    folder.mkdir()
    events = _events(PUBLIC / TRACES["simple_add"][0][0])["traceEvents"]
    (folder / "trace.json").write_text(json.dumps(events))
    [path] = TraceAnalysis(trace_dir=str(folder)).generate_trace_with_counters()
    written = json.loads(Path(path).read_text())
    assert [e for e in written if e.get("ph") != "C"] == events
    assert _series(written).keys() == _series(_htas_simple_add(tmp_path)).keys()


def _htas_simple_add(tmp_path: Path) -> list[dict]:
    """The counter events HTA writes for simple_add."""
    pytest.importorskip("hta")
    from hta.trace_analysis import TraceAnalysis as HtaAnalysis

    folder = _job(tmp_path, "hta_list", TRACES["simple_add"][0])
    HtaAnalysis(trace_dir=str(folder)).generate_trace_with_counters()
    [path] = folder.glob("*_with_counters.json.gz")
    return _events(path)["traceEvents"]


def test_a_file_gone_since_it_was_opened_is_named(tmp_path):
    folder = _job(tmp_path, "gone", TRACES["simple_add"][0])
    analysis = TraceAnalysis(trace_dir=str(folder))
    analysis.get_queue_length_time_series()
    for f in folder.iterdir():
        f.unlink()
    with pytest.raises(ProfileError) as info:
        analysis.generate_trace_with_counters()
    assert "benchmark_result_493459_1694039959_trace.json.gz: cannot be read" in str(info.value)
    assert not list(folder.iterdir())  # nothing half-written
