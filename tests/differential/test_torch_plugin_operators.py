"""The Operator view against PyTorch's TensorBoard plugin (torch-tb-profiler 0.4.3), run live.

For every Kineto trace in tests/data/public recorded with `record_shapes` (its cpu_ops carry
`Input Dims`), the plugin's loader (`RunProfileData.from_json`, as its server calls it) builds
its operator tables, by op and by op and input shape, and each row is compared with ours
(`kineto_operators.operators`): calls, host total and self, device total and self, Tensor Core
eligibility and shares. Every difference is a named rule of docs/framework_op_stats.md, applied
here to the plugin's input or to its answer, so that what remains must match:

- RUNTIME_CATEGORY: the plugin reads runtime calls only under the category `Runtime`; Kineto
  has written `cuda_runtime` / `cuda_driver` since 2022, which the plugin drops (every op's
  device time reads 0, and its host self time keeps the calls). Renamed in its input.
- LAUNCH_BY_NESTING: the plugin ties a runtime call to the op whose `External id` the call
  carries; we tie it to the innermost cpu_op around it on its thread (launch_owners), since
  some PyTorch versions write the correlation there (backward_thread.json: the plugin loses
  the kernel). Each call's External id is set to that op's in its input.
- TENSOR_CORE_RULES: the plugin reads a kernel's Tensor Core use from XProf's old name list
  and eligibility from autocast's list of its day; we read kernel_families (Hopper, AMD MFMA,
  CUTLASS tensorop...; with an unknown) and add PyTorch 2's op names. Its two lists are
  replaced by ours; where some of the op's device time is of unknown use, or there is none,
  our share is NaN (the plugin's is a number).
- ALL_CHILDREN: our host self time subtracts every event directly inside the op (key_averages'
  rule), `record_function` annotations and Python functions included; the plugin subtracts
  the nearest ops below it (seeing through annotations and Python functions) and its runtime
  calls. The difference is recounted from the JSON and added to ours.
- ONLY_CHILD_MERGED: where an op's only child op has its name, the plugin (like
  key_averages()) merges the two: one call fewer, host and device total without the child's.
  Names where that happens are compared only for self times, which the merge keeps; by input
  shape not at all (the child's times move to its parent's shape), and our row of a child's
  shape may have no match.
- FIRST_OCCURRENCE: the plugin's row is Tensor Core eligible when its first occurrence is;
  ours when any is (a `forward` op runs several graphs). Applied to its answer.
- PARTIAL_OVERLAP: an event that overlaps its op only in part (annotations in MTIA traces) is
  dropped by the plugin, where we nest it and take its overlap off the op's self time. Ops
  in such a pair (at most a tenth of the rows) are not compared.
- NOT_OPERATORS: the plugin lists no row for ProfilerStep#N, Optimizer.*, DataLoader and
  DataParallel forward ops, nor for GPU work no op launched; we list them (0 calls for work).

Times: ours are the trace's exact picoseconds; the plugin adds float microseconds, whose last
bit at epoch times is 0.25 us, so each event it reads may be off by that much.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest
from references import read_json, trace_bytes

import xprof_widgets as xw
from xprof_widgets.analysis.kernel_families import YES, tensor_core_use
from xprof_widgets.analysis.kineto.operators import is_tensor_core_eligible, operators

pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler, the reference for the Operator "
                    "view, is not installed (pip install torch-tb-profiler)")
from torch_tb_profiler.profiler import node as plugin_node
from torch_tb_profiler.profiler.data import RunProfileData

pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")  # the plugin's
CORPUS = Path(__file__).resolve().parents[1] / "data" / "public"
RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime", "Driver")
ULP_US = 0.25
"""The float64 step at epoch microseconds (about 1.7e15): the plugin's error per event read."""
NOT_OPERATORS = ("ProfilerStep#", "Optimizer.", "enumerate(DataLoader)#", "enumerate(DataPipe)#",
                 "DataParallel.forward", "DistributedDataParallel.forward")
PLUGIN_ANNOTATIONS = {f"{lib}:{op}" for lib in ("nccl", "gloo") for op in (
    "broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")}
"""Annotations the plugin makes ops of (trace.py's NcclOpNameSet, GlooOpNameSet)."""


def _with_shapes() -> list[Path]:
    """The traces whose ops carry `Input Dims`, each content once (HTA keeps some twice)."""
    found, seen = [], set()
    for path in sorted(CORPUS.rglob("*.json*")):
        text = trace_bytes(path)
        digest = hashlib.sha256(text).digest()
        if b'"Input Dims"' in text and b'"traceEvents"' in text and digest not in seen:
            seen.add(digest)
            found.append(path)
    return found


TRACES = _with_shapes()


def _host_tree(events: list[dict]) -> dict[int, dict]:
    """Per host X event of the nesting kinds (by list index): its parent's index and its
    children's; events nest on their (pid, tid), outer before inner."""
    kinds = ("cpu_op", "Operator", "user_annotation", "python_function", *RUNTIME)
    by_thread = defaultdict(list)
    for i, e in enumerate(events):
        if e.get("ph") == "X" and e.get("cat") in kinds:
            by_thread[(e.get("pid"), e.get("tid"))].append(i)
    tree = {}
    for members in by_thread.values():
        members.sort(key=lambda i: (events[i]["ts"], -(events[i]["ts"] + events[i]["dur"]), i))
        stack: list[int] = []
        for i in members:
            start = events[i]["ts"]
            while stack and events[stack[-1]]["ts"] + events[stack[-1]]["dur"] <= start:
                stack.pop()
            parent = stack[-1] if stack else None
            tree[i] = {"parent": parent, "children": [], "partial": parent is not None and (
                events[i]["ts"] + events[i]["dur"] > events[parent]["ts"] + events[parent]["dur"])}
            if parent is not None:
                tree[parent]["children"].append(i)
            stack.append(i)
    return tree


def _is_op(e: dict) -> bool:
    return e.get("cat") in ("cpu_op", "Operator")


def _plugin_node(e: dict) -> bool:
    """Whether the plugin makes a tree node of a host event: every op; of the annotations, only
    the step marker and the collectives it names; Python functions of modules."""
    if _is_op(e):
        return True
    if e.get("cat") == "user_annotation":
        return e["name"].startswith("ProfilerStep#") or e["name"] in PLUGIN_ANNOTATIONS
    return e.get("cat") == "python_function" and "Python module id" in (e.get("args") or {})


def _owning_op(events: list[dict], tree: dict[int, dict], i: int) -> int | None:
    """The innermost op around event i (the step marker owns nothing), as launch_owners."""
    op = tree[i]["parent"]
    while op is not None and not (_is_op(events[op])
                                  and not events[op]["name"].startswith("ProfilerStep#")):
        op = tree[op]["parent"]
    return op


@cache
def _prepared(path: Path) -> tuple[dict, dict[tuple, float], set[str], set[str]]:
    """The plugin's input with RUNTIME_CATEGORY and LAUNCH_BY_NESTING applied; per (name,) and
    (name, shape) the time our rule subtracts from host self time that the plugin's does not
    (ALL_CHILDREN, may be negative); the names ONLY_CHILD_MERGED touches; the names of ops in
    a PARTIAL_OVERLAP (either side)."""
    trace = copy.deepcopy(read_json(path))
    events = trace["traceEvents"]
    tree = _host_tree(events)
    subtracted: dict[int, float] = defaultdict(float)  # per op: ours minus the plugin's
    merged: set[str] = set()
    partial: set[str] = set()
    for i, node in tree.items():
        e = events[i]
        if node["partial"]:
            partial.update(events[k]["name"] for k in (i, node["parent"]) if _is_op(events[k]))
        if e["cat"] in RUNTIME:
            op = _owning_op(events, tree, i)
            e["args"] = dict(e.get("args") or {})
            e["args"].pop("external id", None)
            e["args"]["External id"] = (events[op].get("args") or {}).get("External id", 0) \
                if op is not None else 0
            e["cat"] = "Runtime"
            if op is not None:
                subtracted[op] -= e["dur"]  # the plugin subtracts its linked calls
        if node["parent"] is not None and _is_op(events[node["parent"]]):
            subtracted[node["parent"]] += e["dur"]  # we subtract every direct child
        if _plugin_node(e) and node["parent"] is not None:
            above = node["parent"]  # the plugin's parent: the nearest node above
            while above is not None and not _plugin_node(events[above]):
                above = tree[above]["parent"]
            if above is not None and _is_op(events[above]):
                subtracted[above] -= e["dur"]
        if _is_op(e):
            kids = [k for k in node["children"] if _is_op(events[k])]
            if len(kids) == 1 and events[kids[0]]["name"] == e["name"]:
                merged.add(e["name"])
    extra: dict[tuple, float] = defaultdict(float)
    for op, time in subtracted.items():
        e = events[op]
        extra[(e["name"],)] += time
        extra[(e["name"], str((e.get("args") or {}).get("Input Dims", [])))] += time
    return trace, extra, merged, partial


class _KernelRule:
    """The plugin's kernel allow list, answered by our kernel_families (TENSOR_CORE_RULES)."""

    def __contains__(self, name: str) -> bool:
        return tensor_core_use(name) == YES


class _OpRule:
    """The plugin's op allow list, answered by ours (TENSOR_CORE_RULES)."""

    def __contains__(self, name: str) -> bool:
        return is_tensor_core_eligible(name)


@cache
def _plugin(path: Path) -> RunProfileData:
    trace = _prepared(path)[0]
    kernels, ops = plugin_node.TC_Allowlist, plugin_node.TC_OP_Allowlist
    plugin_node.TC_Allowlist, plugin_node.TC_OP_Allowlist = _KernelRule(), _OpRule()
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # it logs every overlap it finds
    try:
        return RunProfileData.from_json("worker", "span", copy.deepcopy(trace))
    finally:
        logging.disable(previous)
        plugin_node.TC_Allowlist, plugin_node.TC_OP_Allowlist = kernels, ops


def _eligible_any(profile: RunProfileData, group_by: str) -> dict[tuple, bool]:
    """FIRST_OCCURRENCE applied to the plugin's answer: per row, whether any of its op nodes is
    eligible (the plugin's row keeps its first occurrence's)."""
    out: dict[tuple, bool] = defaultdict(bool)
    stack = list(profile.tid2tree.values())
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if plugin_node.is_operator_node(node):
            key = (node.name,) if group_by == "op" else (node.name, str(node.input_shape))
            out[key] |= bool(node.tc_eligible)
    return out


def _close(ours: float, theirs: float, events: int) -> bool:
    return abs(ours - theirs) <= ULP_US * max(events, 1) + 1e-6 * abs(theirs)


def _compare(row, agg, children_us: float, merged: bool) -> list[str]:
    """The columns where our row and the plugin's differ beyond the named rules."""
    wrong = []
    events = 4 * agg.calls  # an op, its children and runtime calls: a few reads each
    if not merged:
        if row.calls != agg.calls:
            wrong.append(f"calls {row.calls} != {agg.calls}")
        if not _close(row.host_total_time_us, agg.host_duration, agg.calls):
            wrong.append(f"host total {row.host_total_time_us} != {agg.host_duration}")
        if not _close(row.device_total_time_us, agg.device_duration, events):
            wrong.append(f"device total {row.device_total_time_us} != {agg.device_duration}")
    if not _close(row.host_self_time_us + children_us, agg.self_host_duration, events):
        wrong.append(f"host self {row.host_self_time_us} + {children_us} != "
                     f"{agg.self_host_duration}")
    if not merged and not _close(row.device_self_time_us, agg.self_device_duration, events):
        wrong.append(f"device self {row.device_self_time_us} != {agg.self_device_duration}")
    if not merged and bool(row.tensor_core_eligible) != bool(agg.tc_eligible):
        wrong.append(f"eligible {row.tensor_core_eligible} != {agg.tc_eligible}")
    for ours, ratio, time in ((row.tensor_core_self_pct, agg.tc_self_ratio,
                               row.device_self_time_us),
                              (row.tensor_core_total_pct, agg.tc_total_ratio,
                               row.device_total_time_us)):
        if merged or math.isnan(ours):
            continue
        if abs(ours - 100 * ratio) > 0.01 + 100 * ULP_US * events / max(time, 1e-9):
            wrong.append(f"tensor core {ours} != {100 * ratio}")
    return wrong


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(CORPUS)))
@pytest.mark.parametrize("group_by", ["op", "input_shape"])
def test_operator_table_equals_the_plugins(path, group_by):
    theirs = _plugin(path)
    _, extra, merged, partial = _prepared(path)
    eligible = _eligible_any(theirs, group_by)
    table = operators(xw.open_profile(path), group_by)
    keys = ["operation"] if group_by == "op" else ["operation", "input_shape"]
    ours = {tuple(getattr(r, k) for k in keys): r for r in table.itertuples(index=False)}
    aggs = theirs.op_list_groupby_name if group_by == "op" else \
        theirs.op_list_groupby_name_input
    plugin = {(a.name,) if group_by == "op" else (a.name, a.input_shape): a for a in aggs}
    assert plugin, "the plugin lists no op"
    # NOT_OPERATORS: our extra rows are the plugin's non-operators and work without an op.
    for key in set(ours) - set(plugin):
        row = ours[key]
        assert row.calls == 0 or key[0].startswith(NOT_OPERATORS) or (
            group_by == "input_shape" and key[0] in merged), key
    assert set(plugin) <= set(ours)
    problems = {}
    skipped = [key for key in plugin if key[0] in partial]
    assert len(skipped) <= len(plugin) // 10, skipped  # PARTIAL_OVERLAP stays rare
    for key, agg in plugin.items():
        if key[0] in partial or (group_by == "input_shape" and key[0] in merged):
            continue  # a merge moves the child's times to its parent's shape
        agg.tc_eligible = eligible[key]
        wrong = _compare(ours[key], agg, extra.get(key, 0.0), key[0] in merged)
        if wrong:
            problems[key] = wrong
    assert not problems, dict(list(problems.items())[:5])


def _plugin_raw(trace: dict) -> dict[str, object]:
    """The plugin's rows by op on a trace as given, its own lists in place."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        profile = RunProfileData.from_json("worker", "span", copy.deepcopy(trace))
    finally:
        logging.disable(previous)
    return {a.name: a for a in profile.op_list_groupby_name}


def _ours(path: Path) -> dict[str, object]:
    return {r.operation: r for r in operators(xw.open_profile(path), "op").itertuples()}


def test_each_rule_matters():
    """Switched off, each rule leaves the plugin apart from us on a public trace."""
    amd = CORPUS / "hta" / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    raw = _plugin_raw(read_json(amd))  # RUNTIME_CATEGORY: no device time at all
    assert sum(a.device_duration for a in raw.values()) == 0
    assert _ours(amd)["aten::mm"].device_self_time_us > 0
    own_lists = _plugin_raw(_prepared(amd)[0])  # TENSOR_CORE_RULES: MI250's MFMA GEMM
    assert own_lists["aten::mm"].tc_self_ratio == 0
    assert _ours(amd)["aten::mm"].tensor_core_self_pct == 100
    assert {a.name: a for a in _plugin(amd).op_list_groupby_name}["aten::mm"].tc_self_ratio == 1

    backward = CORPUS / "hta" / "call_stack" / "backward_thread.json"
    renamed = read_json(backward)
    for e in renamed["traceEvents"]:
        if e.get("cat") in RUNTIME:
            e["cat"] = "Runtime"
    # LAUNCH_BY_NESTING: the call carries the correlation as its External id
    assert _plugin_raw(renamed)["aten::mm"].self_device_duration == 0
    assert _ours(backward)["aten::mm"].device_self_time_us == 45

    sampled = CORPUS / "hta" / "timeline_analysis" / "sampled_rank-0.json.gz"
    fresh = _plugin.__wrapped__(sampled)  # the cached run's nodes are changed by its readers
    firsts = {a.name: a.tc_eligible for a in fresh.op_list_groupby_name}
    anys = _eligible_any(fresh, "op")
    assert not firsts["forward"] and anys[("forward",)]  # FIRST_OCCURRENCE
    assert "Optimizer.step#EMAOptimizer.step" in _ours(sampled)  # NOT_OPERATORS
    assert "Optimizer.step#EMAOptimizer.step" not in firsts

    comms = CORPUS / "hta" / "distributed_info_unavailable" / "distributed_info_not_found.json.gz"
    assert _prepared(comms)[1][("All2All_Pooled_Req",)] > 0  # ALL_CHILDREN
    dlrm = CORPUS / "param" / "dlrm_v100_8rank" / "worker0_step_12.1694128201545.pt.trace.json.gz"
    assert "aten::mean" in _prepared(dlrm)[2]  # ONLY_CHILD_MERGED
    assert _ours(dlrm)["aten::mean"].calls > _plugin_raw(_prepared(dlrm)[0])["aten::mean"].calls
    mtia = CORPUS / "hta" / "mtia_trace_single_rank" / "mtia_rank_0.json.gz"
    assert _prepared(mtia)[3]  # PARTIAL_OVERLAP
