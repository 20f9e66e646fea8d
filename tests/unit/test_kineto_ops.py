"""Framework Op Stats and steps of PyTorch profiler (Kineto) traces against a recount of the JSON.

Every Kineto trace under tests/data with cpu_ops or GPU work: the table's host rows (calls, total
time, self time) and device rows (launches and time of the GPU work each op launched) equal a
plain-Python recount of the decoded file, in exact picoseconds (Kineto's decimal microseconds).
Self time is PyTorch's (key_averages()): each thread's host events (cpu_ops, annotations, Python
functions, runtime and driver calls) nested with a stack, every direct child subtracted; cpu_ops
and runtime calls are rows. A piece of GPU work's owner is found by its runtime call's
correlation and the innermost cpu_op on that thread around the call, else the innermost
annotation, else Python function (ProfilerStep#N never), else the call itself; without the call
in the trace, the cpu_op of its External id. An owner that is not a cpu_op is typed by its
category.
"""

from __future__ import annotations

import gzip
import json
import re
from bisect import bisect_right
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets import tools
from xprof_widgets.analysis.framework_op_stats import MAX_ROWS, framework_op_stats_available
from xprof_widgets.analysis.kineto import CPU_OPS
from xprof_widgets.analysis.kineto.ops import DEVICE_WORK
from xprof_widgets.analysis.steps import find_steps

DATA = Path(__file__).resolve().parents[1] / "data"
RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime", "Driver")
NESTED = (*CPU_OPS, *RUNTIME, "user_annotation", "python_function")
NCCL = DATA / "public" / "hta" / "nccl_parser_config" / "nccl_data.json.gz"
TORCH_HTA = DATA / "torch_hta" / "rank-0.json.gz"


def _bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _kineto_traces() -> list[Path]:
    """The corpus's and our own PyTorch traces that hold cpu_ops or GPU work."""
    paths = sorted((DATA / "public" / "hta").rglob("*.json*"))
    paths += sorted(p for p in DATA.glob("torch_*") if p.is_file())
    paths += sorted(p for d in DATA.glob("torch_*") if d.is_dir() for p in d.rglob("*.json*"))
    marks = [f'"cat": "{c}"'.encode() for c in (*CPU_OPS, *DEVICE_WORK)]
    return [p for p in paths if any(m in _bytes(p) for m in marks)]


TRACES = _kineto_traces()


def _events(path: Path) -> list[dict]:
    return [e for e in json.loads(_bytes(path), parse_float=Decimal)["traceEvents"]
            if isinstance(e, dict)]


def _ps(value) -> int:
    exact = Decimal(value) * 10**6
    assert exact == exact.to_integral_value()
    return int(exact)


OWNERS = (CPU_OPS, ("user_annotation",), ("python_function",))
STEP = re.compile(r"ProfilerStep#\d+")


def _type(name: str, category: str = "cpu_op") -> str:
    if category not in CPU_OPS:  # runtime calls, and device rows owned by other events
        return category
    return name.split("::")[0] if "::" in name and not name.startswith("::") else "Unknown"


class _Thread:
    """One thread's cpu_ops in nesting order (start, longer first, file order), each op's
    parent and its self time."""

    def __init__(self, ops: list[tuple[int, int, int, str]]):
        ops.sort(key=lambda op: (op[0], -op[1], op[2]))
        self.starts = [op[0] for op in ops]
        self.ends = [op[0] + op[1] for op in ops]
        self.names = [op[3] for op in ops]
        self.parent = [-1] * len(ops)
        self.own = [op[1] for op in ops]
        stack: list[int] = []
        for k, (start, length, _, _) in enumerate(ops):
            while stack and self.ends[stack[-1]] <= start:
                stack.pop()
            if stack:
                # An event running past its parent (an annotation in MTIA's traces) takes
                # off its overlap only; PyTorch would not count it as a child at all.
                parent = stack[-1]
                self.parent[k] = parent
                self.own[parent] -= min(start + length, self.ends[parent]) - start
            stack.append(k)

    def innermost_around(self, begin: int, end: int) -> str | None:
        """The innermost op spanning [begin, end]: an ancestor of the last op started by then."""
        at = bisect_right(self.starts, begin) - 1
        while at >= 0 and self.ends[at] < end:
            at = self.parent[at]
        return self.names[at] if at >= 0 else None


def recount(path: Path) -> dict[str, dict]:
    """Per side, (type, operation) -> [occurrences, total ps, self ps], and each side's span."""
    events = _events(path)
    by_thread = [defaultdict(list) for _ in OWNERS]
    nested, by_ext = defaultdict(list), {}
    for index, e in enumerate(events):
        if e.get("cat") in NESTED and e.get("ph") == "X":
            nested[(e["pid"], e["tid"])].append((_ps(e["ts"]), _ps(e.get("dur", 0)), index,
                                                 (e["cat"], e["name"])))
        for level, categories in enumerate(OWNERS):
            if e.get("cat") in categories and e.get("ph") == "X" and \
                    not STEP.fullmatch(e["name"]):
                by_thread[level][(e["pid"], e["tid"])].append(
                    (_ps(e["ts"]), _ps(e.get("dur", 0)), index, (e["cat"], e["name"])))
        if e.get("cat") in CPU_OPS and e.get("ph") == "X":
            args = e.get("args", {})
            by_ext.setdefault(args.get("External id", args.get("external id")),
                              (e["cat"], e["name"]))
    threads = [{key: _Thread(ops) for key, ops in level.items()} for level in by_thread]
    host: dict[tuple, list[int]] = {}
    host_span = 0
    for thread in (_Thread(ops) for ops in nested.values()):
        rows = [k for k, (cat, _) in enumerate(thread.names) if cat in (*CPU_OPS, *RUNTIME)]
        for k in rows:
            cat, name = thread.names[k]
            row = host.setdefault((_type(name, cat), name), [0, 0, 0])
            row[0] += 1
            row[1] += thread.ends[k] - thread.starts[k]
            row[2] += thread.own[k]
        if rows:
            host_span += max(thread.ends[k] for k in rows) - min(thread.starts[k] for k in rows)
    calls = {}
    for e in events:
        if e.get("cat") in RUNTIME and "correlation" in e.get("args", {}):
            calls.setdefault(e["args"]["correlation"], e)
    device: dict[tuple, list] = {}
    work: dict[int, list[tuple[int, int, list]]] = {}
    for e in events:
        if e.get("cat") not in DEVICE_WORK or e.get("ph") != "X":
            continue
        args = e.get("args", {})
        op = None
        call = calls.get(args.get("correlation"))
        if call is None:
            op = by_ext.get(args.get("External id", args.get("external id")))
        else:
            begin = _ps(call["ts"])
            for level in threads:
                thread = level.get((call["pid"], call["tid"]))
                op = op or (thread and thread.innermost_around(
                    begin, begin + _ps(call.get("dur", 0))))
            op = op or (call["cat"], call["name"])
        key = (_type(op[1], op[0]), op[1]) if op is not None else ("Unknown", e["name"])
        start, length = _ps(e["ts"]), _ps(e.get("dur", 0))
        row = device.setdefault(key, [0, 0, Fraction(0)])
        row[0] += 1
        row[1] += length
        work.setdefault(e["pid"], []).append((start, start + length, row))
    device_span = sum(max(w[1] for w in pieces) - min(w[0] for w in pieces)
                      for pieces in work.values())
    busy = sum(_split_evenly(pieces) for pieces in work.values())
    return {"Host": host, "Device": device, "spans": {"Host": host_span, "Device": device_span},
            "busy": {"Device": busy}}


def _split_evenly(pieces: list[tuple[int, int, list]]) -> int:
    """One GPU's busy time shared among its pieces of work: each stretch between two start or
    end points counts 1/k to each of the k pieces running (exact fractions, added to each
    piece's row); returns the union's length."""
    marks = sorted([(start, 1, k) for k, (start, _, _) in enumerate(pieces)]
                   + [(end, 0, k) for k, (_, end, _) in enumerate(pieces)])
    running: set[int] = set()
    union, last = 0, None
    for point, starts, k in marks:
        if running and point > last:
            union += point - last
            for j in running:
                pieces[j][2][2] += Fraction(point - last, len(running))
        last = point
        (running.add if starts else running.discard)(k)
    return union


def _rows(table, where: str) -> tuple[dict[tuple, list[int]], int]:
    side = table[table["host_or_device"] == where]
    rows, idle = {}, 0
    for row in side.itertuples(index=False):
        values = [row.occurrences, round(row.total_time_us * 10**6),
                  round(row.total_self_time_us * 10**6)]
        if row.type == "IDLE":
            idle = values[2]
            continue
        key = (row.type, row.operation)
        assert key not in rows, key
        rows[key] = values
    return rows, idle


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(DATA)) for p in TRACES])
def test_op_table_equals_a_recount_of_the_json(path):
    profile = xw.open_profile(path)
    expected = recount(path)
    assert expected["Host"] or expected["Device"]
    assert framework_op_stats_available(profile)
    table = xw.FrameworkOpStats(profile).to_dataframe()
    for where in ("Device", "Host"):
        assert len(expected[where]) < MAX_ROWS
        got, idle = _rows(table, where)
        if where == "Device":  # shares of the busy time, to the picosecond
            assert {k: v[:2] for k, v in got.items()} == \
                {k: v[:2] for k, v in expected[where].items()}
            for key, row in expected[where].items():
                assert abs(got[key][2] - row[2]) <= 1, key
        else:
            assert got == expected[where], where
        if expected[where]:
            busy = expected.get("busy", {}).get(where, sum(
                row[2] for row in expected[where].values()))
            assert idle == max(0, expected["spans"][where] - busy)
            side = table[table["host_or_device"] == where]
            cumulative = side[f"{where.lower()}_cumulative_total_self_time_pct"]
            assert cumulative.iloc[-1] == pytest.approx(100, abs=1e-9)  # never above 100%
            own = side["total_self_time_us"].tolist()
            assert own == sorted(own, reverse=True)
            assert set(side.loc[side["type"] != "IDLE", "execution_mode"]) == {"Eager"}
        else:
            assert where not in set(table["host_or_device"])
    assert table["rank"].tolist() == list(range(1, len(table) + 1))


def test_nccl_trace_has_both_sides():
    """nccl_data launches its kernels from cpu_ops: device rows name those ops, their device time
    adds up to every kernel, copy and set of the trace."""
    table = xw.FrameworkOpStats(NCCL).to_dataframe()
    device = table[(table["host_or_device"] == "Device") & (table["type"] != "IDLE")]
    host = table[(table["host_or_device"] == "Host") & (table["type"] != "IDLE")]
    assert len(device) and len(host)
    assert "aten::convolution_backward" in set(device["operation"])
    work = sum(_ps(e.get("dur", 0)) for e in _events(NCCL) if e.get("cat") in DEVICE_WORK)
    assert round(device["total_time_us"].sum() * 10**6) == work
    assert device["device_total_self_time_pct"].sum() + table.loc[
        (table["host_or_device"] == "Device") & (table["type"] == "IDLE"),
        "device_total_self_time_pct"].sum() == pytest.approx(100)


def test_cpu_only_trace_has_host_rows_only():
    table = xw.FrameworkOpStats(TORCH_HTA).to_dataframe()
    assert set(table["host_or_device"]) == {"Host"}
    assert {"aten", "autograd", "c10d"} <= set(table["type"])


def test_suite_offers_framework_op_stats_on_kineto_traces():
    for path in (NCCL, TORCH_HTA):
        profile = xw.open_profile(path)
        assert "framework_op_stats" in [t.key for t in tools.offered(profile)]
        suite = xw.Profiler(profile)
        assert "framework_op_stats" in suite.tab_keys
        widget = suite.tool("framework_op_stats")
        assert len(widget.to_dataframe()) == len(xw.FrameworkOpStats(profile).to_dataframe()) > 1
        assert widget._summary["host_ops"] > 0


@pytest.mark.parametrize("path", [TORCH_HTA, NCCL], ids=["torch_hta", "nccl_data"])
def test_steps_are_the_profiler_steps_on_the_cpu(path):
    """Steps, the Overview's and the Input Pipeline's, are the ProfilerStep#N annotations of the
    CPU (not their gpu_user_annotation copies), at their exact times."""
    expected = {}
    for e in _events(path):
        match = re.fullmatch(r"ProfilerStep#(\d+)", e.get("name", ""))
        if match and e.get("ph") == "X" and e.get("cat") in (*CPU_OPS, "user_annotation"):
            start = _ps(e["ts"])
            expected[int(match.group(1))] = (e["name"], start, start + _ps(e["dur"]))
    assert len(expected) >= 3
    profile = xw.open_profile(path)
    steps = find_steps(profile)
    assert steps.source == "host step roots"
    got = {int(r.step): (r.name, int(r.start_ps), int(r.end_ps))
           for r in steps.markers.itertuples(index=False)}
    assert sorted(got) == sorted(expected)
    assert len({got[k][1] - expected[k][1] for k in got}) == 1  # one origin for the trace
    assert {k: (v[0], v[2] - v[1]) for k, v in got.items()} == \
        {k: (v[0], v[2] - v[1]) for k, v in expected.items()}
    pipeline = xw.InputPipeline(profile).to_dataframe()
    assert pipeline["step"].tolist() == sorted(expected)
