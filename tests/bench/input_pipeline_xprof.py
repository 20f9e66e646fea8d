"""XProf's input_pipeline_analyzer on our input-pipeline test profiles: the expected values.

    /tmp/xprofvenv/bin/python tests/bench/input_pipeline_xprof.py   # rewrites the JSON files

Runs XProf (`pip install xprof` into its own venv, never into .venv) offline through
`xprof.convert.raw_to_tool_data.xspace_to_tool_data(paths, "input_pipeline_analyzer", {})` on
a copy of each profile in a temporary logdir (XProf writes caches beside the xplane), and
writes what it found to tests/data/expected/input_pipeline_<case>.json: the steps with their
step times, the step-time summary, the host input-op table and its category totals. The unit
tests compare `analyze_input_pipeline` with these files; the live test runs XProf itself.

Also the home of `tpu_steps_xspace`, the synthetic two-chip TPU profile with a `Steps` line and
a tf.data pipeline that the tests and this script share.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
EXPECTED = DATA / "expected"
US = 1_000_000  # ps

# The profiles XProf is asked about; "tpu_steps" is built by `tpu_steps_xspace`.
CASES = {
    "demo": EXPECTED / "input_pipeline_demo.xplane.pb",
    "tpu_steps": None,
    "tpu_v6e": DATA / "tpu_v6e_inference.xplane.pb",
}
TPU_STEPS_INPUT_BOUND = (2, 5)
"""Steps of `tpu_steps_xspace` whose infeed waits 4 ms of a ~11 ms step (the others 0.2 ms)."""


def tpu_steps_xspace(steps: int = 8, chips: int = 2) -> bytes:
    """Two TPU chips with `Steps`, `XLA Modules` and `XLA Ops` lines, the second chip 2% slower;
    a host running a tf.data pipeline (consumer and a reader thread) and an infeed enqueue."""
    sys.path.insert(0, str(REPO / "tests" / "unit"))
    from xspace_builder import build_xspace

    categories = {"infeed.1": "infeed", "fusion.1": "non-fusion elementwise",
                  "convolution.2": "convolution", "all-reduce.3": "all-reduce"}
    planes = []
    for chip in range(chips):
        slow = 1 + 0.02 * chip
        step_events, module_events, op_events = [], [], []
        t = 1000 * US
        for k in range(steps):
            ops = [("infeed.1", (4000 if k in TPU_STEPS_INPUT_BOUND else 200) * US),
                   ("fusion.1", (3600 + 60 * k) * US), ("convolution.2", (2400 + 40 * k) * US),
                   ("all-reduce.3", 500 * US)]
            duration = int((sum(d for _, d in ops) + 300 * US) * slow)
            step_events.append((str(k), t, duration, {"group_id": k}))
            module_events.append(("jit_train_step(1)", t, duration - 100 * US, {"group_id": k}))
            offset = t
            for symbol, (name, d) in enumerate(ops, start=1):
                op_events.append((name, offset, int(d * slow),
                                  {"group_id": k, "program_id": 1, "symbol_id": symbol}))
                offset += int(d * slow)
            t += duration + 50 * US
        planes.append({
            "name": f"/device:TPU:{chip}",
            "stats": {"device_type_string": "TPU v6 Lite", "peak_teraflops_per_second": 918.0},
            "metadata": {n: {"display_name": n, "stats": {"hlo_category": c, "program_id": 1}}
                         for n, c in categories.items()},
            "lines": [{"name": "Steps", "events": step_events},
                      {"name": "XLA Modules", "events": module_events},
                      {"name": "XLA Ops", "events": op_events}],
        })
    consumer, reader = [], []
    t = 900 * US
    for _ in range(steps):
        consumer += [("Iterator::Root", t, 3000 * US, {}),
                     ("Iterator::Root::Prefetch", t + 10 * US, 2980 * US, {}),
                     ("infeed_queue/enqueue:InfeedEnqueueTuple", t + 3010 * US, 150 * US, {})]
        reader += [("Iterator::Root::Prefetch::ParallelMapV2", t + 5 * US, 2000 * US, {}),
                   ("Iterator::Root::Prefetch::ParallelMapV2::TFRecord", t + 105 * US,
                    1200 * US, {}),
                   ("Iterator::Root::Prefetch::ParallelMapV2::Interleave::TFRecord",
                    t + 2105 * US, 400 * US, {})]
        t += 11000 * US
    planes.append({"name": "/host:CPU", "lines": [
        {"name": "python", "events": consumer},
        {"name": "tf_data_private_threadpool", "events": reader}]})
    return build_xspace(planes)


def run_xprof(xplane: bytes, host: str = "host0") -> list:
    """XProf's input_pipeline_analyzer tables (a list of DataTable JSON dicts) for one file."""
    from xprof.convert import raw_to_tool_data

    with tempfile.TemporaryDirectory() as logdir:
        run_dir = Path(logdir) / "plugins" / "profile" / "run"
        run_dir.mkdir(parents=True)
        path = run_dir / f"{host}.xplane.pb"
        path.write_bytes(xplane)
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "input_pipeline_analyzer", {})
    if data is None:
        raise RuntimeError("XProf's input_pipeline_analyzer returned nothing")
    return json.loads(data)


def summarize(tables: list) -> dict:
    """The parts of XProf's answer the tests compare with."""
    steps_table, ops_table = tables[1], tables[2]
    ids = [c["id"] for c in steps_table["cols"]]
    time_cols = [i for i, c in enumerate(ids) if c.endswith("TimeMs") and c != "stepTimeMs"]
    steps = []
    for row in steps_table["rows"]:
        values = [c.get("v") for c in row["c"]]
        if "stepTimeMs" in ids:
            ms = values[ids.index("stepTimeMs")]
        else:  # the TPU table has no total: its parts add up to the step time
            ms = sum(values[i] for i in time_cols)
        steps.append({"label": str(values[0]), "step_time_ms": ms})
    p = steps_table.get("p", {})
    op_ids = [c["id"] for c in ops_table["cols"]]
    ops = [dict(zip(op_ids, [c.get("v") for c in row["c"]], strict=True))
           for row in ops_table["rows"]]
    return {
        "hardware_type": p.get("hardware_type"),
        "steps": steps,
        "step_time_ms": {k: float(p[f"steptime_ms_{k}"]) for k in
                         ("average", "standard_deviation", "minimum", "maximum")
                         if f"steptime_ms_{k}" in p},
        "input_conclusion": p.get("input_conclusion", ""),
        "input_ops": [{"input_op": o["opName"], "count": int(o["count"]),
                       "total_time_ms": o["timeInMs"], "self_time_ms": o["selfTimeInMs"],
                       "self_time_pct": 100 * o["selfTimeInPercent"], "category": o["category"]}
                      for o in ops],
        "host_breakdown_us": {k: float(v) for k, v in ops_table.get("p", {}).items()},
        "diagnostics": [[c.get("v") for c in r["c"]] for r in tables[4]["rows"]],
    }


def case_bytes(case: str) -> bytes:
    path = CASES[case]
    return tpu_steps_xspace() if path is None else path.read_bytes()


def main() -> None:
    from importlib.metadata import version

    EXPECTED.mkdir(parents=True, exist_ok=True)
    for case, path in CASES.items():
        result = summarize(run_xprof(case_bytes(case)))
        result = {"xprof_version": version("xprof"),
                  "profile": str(path.relative_to(REPO)) if path else
                  "tests/bench/input_pipeline_xprof.py:tpu_steps_xspace()",
                  **result}
        out = EXPECTED / f"input_pipeline_{case}.json"
        out.write_text(json.dumps(result, indent=1) + "\n")
        times = ", ".join(f"{s['step_time_ms']:.3f}" for s in result["steps"][:6])
        print(f"{case:10} {result['hardware_type']:9} {len(result['steps']):3} steps "
              f"[{times}{', ...' if len(result['steps']) > 6 else ''}] "
              f"{len(result['input_ops'])} input ops -> {out.relative_to(REPO)}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
