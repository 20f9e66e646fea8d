"""Kernel Stats of PyTorch profiler (Kineto) traces against a brute-force recount of the JSON.

Every corpus trace with `kernel` events: the kernels grouped by name and launch parameters
(registers, shared memory, grid, block) count, add up and bound their durations exactly as the
table does (decimal microseconds, so exact picoseconds); each kernel's op is found the slow way
(the runtime call of its correlation, then the shortest cpu_op on that thread around it, else
annotation, else Python function, never ProfilerStep#N, else the call itself; without the call,
the cpu_op of its External id).
"""

from __future__ import annotations

import gzip
import json
import math
import re
from bisect import bisect_right
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets import tools
from xprof_widgets.analysis.kernel_families import tensor_core_use
from xprof_widgets.analysis.kernel_stats import kernel_stats, kernel_stats_available
from xprof_widgets.analysis.kineto import CPU_OPS, KERNELS, meta_categories

CORPUS = Path(__file__).resolve().parents[1] / "data" / "public" / "hta"
RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime", "Driver")
OWNERS = (CPU_OPS, ("user_annotation",), ("python_function",))
STEP = re.compile(r"ProfilerStep#\d+")


def _json(path: Path) -> dict:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data,
                      parse_float=Decimal)


def _with_kernels() -> list[Path]:
    out = []
    for path in sorted(CORPUS.rglob("*.json*")):
        data = path.read_bytes()
        data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        if any(f'"cat": "{c}"'.encode() in data for c in KERNELS):
            out.append(path)
    return out


TRACES = _with_kernels()


def _ps(value) -> int:
    exact = Decimal(value) * 10**6
    assert exact == exact.to_integral_value()
    return int(exact)


def _dims(value) -> str:
    dims = list(value) if isinstance(value, list) else []
    dims = [d if type(d) is int else 1 for d in dims[:3]] + [1] * (3 - len(dims[:3]))
    return ",".join(map(str, dims))


def _launching_op(kernel: dict, calls: dict, levels: list[dict], ops_by_ext: dict) -> str:
    """The slow way: the runtime call with the kernel's correlation, then per level (cpu_ops,
    annotations, Python functions) the events on its thread from the latest start at or before
    the call's backwards: the first that spans the call (the shortest among those of one
    start, the later in the file among equal ones: Kineto writes the outer op first) owns it;
    else the call; without the call, the cpu_op of the kernel's External id."""
    args = kernel.get("args", {})
    call = calls.get(args.get("correlation"))
    if call is None:
        return ops_by_ext.get(args.get("External id", args.get("external id")), "")
    begin = _ps(call["ts"])
    end = begin + _ps(call.get("dur", 0))
    for ops_by_thread in levels:
        ops = ops_by_thread.get((call["pid"], call["tid"]), [])
        spanning = []
        for at in range(bisect_right(ops, (begin, math.inf, 0, "")) - 1, -1, -1):
            start, minus_length = ops[at][:2]
            if spanning and start < spanning[0][0]:
                break
            if start - minus_length >= end:
                spanning.append(ops[at])
        if spanning:
            return max(spanning)[3]
    return call["name"]


def recount(path: Path) -> dict[tuple, dict]:
    """(kernel, registers, shared memory, grid, block, op) -> occurrences, total/min/max ps."""
    events = [e for e in _json(path)["traceEvents"] if isinstance(e, dict)]
    calls = {}
    for e in events:
        if e.get("cat") in RUNTIME and "correlation" in e.get("args", {}):
            calls.setdefault(e["args"]["correlation"], e)
    levels, ops_by_ext = [defaultdict(list) for _ in OWNERS], {}
    for index, e in enumerate(events):
        for level, categories in zip(levels, OWNERS, strict=True):
            if e.get("cat") in categories and e.get("ph") == "X" and \
                    not STEP.fullmatch(e["name"]):
                level[(e["pid"], e["tid"])].append(
                    (_ps(e["ts"]), -_ps(e["dur"]), index, e["name"]))
        if e.get("cat") in CPU_OPS and e.get("ph") == "X":
            args = e.get("args", {})
            ops_by_ext.setdefault(args.get("External id", args.get("external id")), e["name"])
    for level in levels:
        for ops in level.values():
            ops.sort()
    rows: dict[tuple, dict] = {}
    for e in events:
        if e.get("cat") not in KERNELS:
            continue
        args = e.get("args", {})
        key = (e["name"], int(args.get("registers per thread", 0)),
               int(args.get("shared memory", 0)), _dims(args.get("grid")),
               _dims(args.get("block")), _launching_op(e, calls, levels, ops_by_ext))
        ps = _ps(e.get("dur", 0))
        row = rows.setdefault(key, {"occurrences": 0, "total": 0, "min": ps, "max": ps})
        row["occurrences"] += 1
        row["total"] += ps
        row["min"], row["max"] = min(row["min"], ps), max(row["max"], ps)
    return rows


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(CORPUS)) for p in TRACES])
def test_kernel_table_equals_a_recount_of_the_json(path):
    profile = xw.open_profile(path)
    table = kernel_stats(profile)
    expected = recount(path)
    assert expected and kernel_stats_available(profile)
    got = {}
    for row in table.itertuples(index=False):
        key = (row.kernel_name, row.registers_per_thread, row.shmem_bytes, row.grid_dim,
               row.block_dim, row.op_name)
        assert key not in got, key
        got[key] = {"occurrences": row.occurrences,
                    "total": round(row.total_duration_us * 10**6),
                    "min": round(row.min_duration_us * 10**6),
                    "max": round(row.max_duration_us * 10**6)}
        # Kineto kernels: the wider tri-state rule (kernel_families.py), None where unknown
        assert {True: "yes", False: "no", None: "unknown"}[
            row.is_kernel_using_tensor_core] == tensor_core_use(row.kernel_name)
        assert row.avg_duration_us == (got[key]["total"] // row.occurrences) / 10**6
    assert got == expected
    totals = table["total_duration_us"].tolist()
    assert totals == sorted(totals, reverse=True)
    assert table["rank"].tolist() == list(range(1, len(table) + 1))


def test_occupancy_where_the_trace_says_it():
    """nccl_data states `est. achieved occupancy %` per kernel: each row shows one its kernels
    state (a kind's first, as XProf keeps it); the ROCm trace states none (NaN)."""
    path = CORPUS / "nccl_parser_config" / "nccl_data.json.gz"
    stated = defaultdict(set)
    for e in _json(path)["traceEvents"]:
        if e.get("cat") == "kernel":
            args = e["args"]
            stated[(e["name"], _dims(args["grid"]), _dims(args["block"]))].add(
                float(args["est. achieved occupancy %"]))
    table = kernel_stats(xw.open_profile(path))
    assert len(table)
    for row in table.itertuples(index=False):
        assert row.occupancy_pct in stated[(row.kernel_name, row.grid_dim, row.block_dim)]
    rocm = kernel_stats(xw.open_profile(
        CORPUS / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    assert len(rocm) and all(math.isnan(v) for v in rocm["occupancy_pct"])


def test_category_tells_a_cpu_step_from_a_gpu_step():
    """ProfilerStep#N is a user_annotation on the CPU and a gpu_user_annotation on the GPU: two
    metadata rows, told apart by their category."""
    profile = xw.open_profile(CORPUS / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    md = profile.metadata
    categories = meta_categories(profile)
    steps = md.index[md["name"].str.startswith("ProfilerStep")]
    assert {categories[m] for m in steps} == {"user_annotation", "gpu_user_annotation"}
    gpu_step = steps[[categories[m] == "gpu_user_annotation" for m in steps]][0]
    event = int(next(e for e in range(profile.n_events) if profile.meta[e] == gpu_step))
    assert profile.metadata_stats(event) == {"category": "gpu_user_annotation"}
    assert profile.sections["kind"].iat[int(md["section_id"].iat[gpu_step])] == "device"


def test_kineto_trace_offers_kernel_stats():
    profile = xw.open_profile(CORPUS / "nccl_parser_config" / "nccl_data.json.gz")
    assert "kernel_stats" in [t.key for t in tools.offered(profile)]
    ks = xw.KernelStats(profile)
    assert len(ks.to_dataframe()) == len(kernel_stats(profile)) > 0
    assert ks.kernel_breakdown()["kernel_type"].iat[0] == "COMPUTATION"
    cpu_only = xw.open_profile(CORPUS / "cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    assert not kernel_stats_available(cpu_only)
