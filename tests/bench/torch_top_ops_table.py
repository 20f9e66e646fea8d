"""The top ops of a PyTorch trace: ours beside PyTorch's `key_averages()` and its TensorBoard plugin.

    python tests/bench/torch_top_ops_table.py [--gpu-trace TRACE] [--plugin-answers FILE]
                                              [--top 15] [--out FILE]

Per op, for calls, host self, host total, device self and device total time (us), each cell reads
`ours / reference...` (issue 30's closing table). Two tables:

- CPU: tests/data/torch_self_time, whose `key_averages.json` is PyTorch's own answer for the same
  run (tests/data/make/torch_self_time.py): ours / key_averages / the plugin (torch-tb-profiler,
  run live on the trace). No device columns: the run had no GPU.
- GPU (--gpu-trace, by default the committed ResNet50 sample): ours / the plugin run live / the
  plugin's kept answer. The kept answers are torch-tb-profiler's own test file
  (`tb_plugin/test/result_check_file.txt`, read by tests/differential/plugin_answers.py), made by its
  server on its ResNet50 V100 samples; its tests held that view equal to `key_averages()` of a
  live run (test_compare_with_autograd.py), which needs a GPU, so no key_averages() of that run is
  kept anywhere. Both were in pytorch/kineto until commit 94979607 removed tb_plugin; the trace
  and this run's part of the file are committed under tests/data/public/torch_tb_plugin/.

Ours is `FrameworkOpStats(...).to_dataframe(group_by="op")`. Where a cell's numbers differ, the
reason is one of the named rules of docs/framework_op_stats.md (the plugin merges an op's only
child of its name; it subtracts only the ops and runtime calls below an op, not annotations).
Nothing here asserts; tests/unit/test_kineto_self_time.py and
tests/differential/test_torch_plugin_operators.py and test_torch_plugin_answers.py do.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import logging
import math
import sys
import warnings
from pathlib import Path

import xprof_widgets as xw

DATA = Path(__file__).resolve().parents[1] / "data"
sys.path.insert(0, str(DATA.parent / "differential"))
from plugin_answers import ANSWERS, TRACE, kept_operators

CPU_TRACE = DATA / "torch_self_time" / "trace.json.gz"
KEY_AVERAGES = DATA / "torch_self_time" / "key_averages.json"
FIELDS = ("calls", "host_self_time_us", "host_total_time_us", "device_self_time_us",
          "device_total_time_us")
HEADS = ("calls", "host self", "host total", "device self", "device total")
PLUGIN_FIELDS = ("calls", "self_host_duration", "host_duration", "self_device_duration",
                 "device_duration")
"""The plugin's OperatorAgg attributes for FIELDS."""


def ours(path: Path) -> dict[str, dict[str, float]]:
    table = xw.FrameworkOpStats(xw.open_profile(path)).to_dataframe(group_by="op")
    return {row["operation"]: {f: float(row[f]) for f in FIELDS}
            for row in table.to_dict("records")}


def plugin(path: Path) -> dict[str, dict[str, float]] | None:
    """torch-tb-profiler's operator rows by name, its loader run as its server runs it; None
    where it is not installed."""
    try:
        from torch_tb_profiler.profiler.data import RunProfileData
    except ImportError:
        return None
    data = path.read_bytes()
    trace = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # it logs every overlap it finds
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = RunProfileData.from_json("worker0", "span", copy.deepcopy(trace))
            run.process()
    finally:
        logging.disable(previous)
    return {a.name: {f: float(getattr(a, p)) for f, p in zip(FIELDS, PLUGIN_FIELDS, strict=True)}
            for a in run.op_list_groupby_name}


def key_averages() -> dict[str, dict[str, float]]:
    rows = json.loads(KEY_AVERAGES.read_text())
    return {r["key"]: {"calls": float(r["count"]), "host_self_time_us": r["self_cpu_time_total_us"],
                       "host_total_time_us": r["cpu_time_total_us"]} for r in rows}


def number(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "—"
    return f"{value:,.0f}" if value == round(value) else f"{value:,.3f}"


def top_table(title: str, mine: dict, references: list[tuple[str, dict | None]], fields: tuple,
              top: int, by: str) -> str:
    """A Markdown table of the `top` ops by our `by` column; each cell ours / each reference."""
    names = sorted(mine, key=lambda n: -mine[n][by])[:top]
    heads = [HEADS[FIELDS.index(f)] for f in fields]
    lines = [f"### {title}", "",
             (f"Each cell: ours / {' / '.join(label for label, _ in references)}; times in us; "
             f"top {top} by our {HEADS[FIELDS.index(by)]}. — : the reference has no such row."), "",
             "| op | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    for name in names:
        cells = []
        for f in fields:
            values = [mine[name][f]] + [(ref or {}).get(name, {}).get(f) for _, ref in references]
            cells.append(" / ".join(number(v) for v in values))
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpu-trace", type=Path, default=TRACE,
                        help="a GPU trace (default: the plugin's ResNet50 sample)")
    parser.add_argument("--plugin-answers", type=Path, default=ANSWERS,
                        help="torch-tb-profiler's result_check_file.txt for --gpu-trace (default: "
                        "its kept answers for the sample; pass '' for another trace)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--out", type=Path, help="also write the tables here")
    args = parser.parse_args()

    host = FIELDS[:3]
    parts = [top_table(f"CPU: {CPU_TRACE.relative_to(DATA.parent.parent)}", ours(CPU_TRACE),
                       [("key_averages()", key_averages()), ("plugin", plugin(CPU_TRACE))],
                       host, args.top, "host_self_time_us")]
    if args.gpu_trace:
        references = [("plugin", plugin(args.gpu_trace))]
        if args.plugin_answers and args.plugin_answers.name:
            references.append(("plugin's kept answer", kept_operators(args.plugin_answers)))
        parts.append(top_table(f"GPU: {args.gpu_trace.name}", ours(args.gpu_trace), references,
                               FIELDS, args.top, "device_self_time_us"))
    text = "\n\n".join(parts) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
