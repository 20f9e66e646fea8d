"""Graph Viewer scale: the neighbourhood of an op in a large synthetic HLO module.

    python tests/bench/bench_graph.py [--instructions 20000] [--repeat 5]

A synthetic TPU training program (xprof_widgets/synthetic) with about --instructions
instructions in its entry computation (fusion bodies come on top). Rows, each the median of
--repeat runs, wall and CPU seconds:
- cold: from the serialized HloProto to the first neighbourhood's nodes() and edges() (parse,
  scan, index of the op's computation, walk, rows);
- warm: another op's neighbourhood on the indexed module, nodes() + edges() + to_dot();
  width 3, fusions merged and expanded.
Nothing here asserts; the issue's target is 200 ms for width 3.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from common import table

from xprof_widgets.analysis.graph import ModuleGraph, Neighbourhood
from xprof_widgets.profile.schema import HloProto
from xprof_widgets.synthetic.hlo import build_hlo_proto
from xprof_widgets.synthetic.program import layers_for, make_program


def _module(instructions: int) -> bytes:
    program = make_program("jit_big", "tpu", layers_for(instructions), 1, True, 1e14, 1e12)
    return build_hlo_proto(program)


def _graph(data: bytes) -> ModuleGraph:
    return ModuleGraph(HloProto.FromString(data), data, 1, "jit_big(1)")


def _draw(graph: ModuleGraph, op: str, merge: bool) -> int:
    nb = Neighbourhood(graph, op, 3, merge)
    nb.edges()
    nb.to_dot()
    return len(nb.nodes())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instructions", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = _module(args.instructions)
    proto = HloProto.FromString(data)
    entry = next(c for c in proto.hlo_module.computations
                 if c.name == proto.hlo_module.entry_computation_name)
    total = sum(len(c.instructions) for c in proto.hlo_module.computations)
    names = [i.name for i in entry.instructions]
    fusions = [i.name for i in entry.instructions if i.opcode == "fusion"]
    ops = [fusions[len(fusions) // 2], names[len(names) // 3]]
    rows = []
    for merge in (True, False):
        cold, warm, shown = [], [], 0
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            graph = _graph(data)
            nb = Neighbourhood(graph, ops[0], 3, merge)
            nb.nodes()
            nb.edges()
            cold.append((time.perf_counter() - wall, time.process_time() - cpu))
            wall, cpu = time.perf_counter(), time.process_time()
            shown = _draw(graph, ops[1], merge)
            warm.append((time.perf_counter() - wall, time.process_time() - cpu))
        rows.append([f"width 3, fusions {'merged' if merge else 'expanded'}", len(names), total,
                     shown, *_medians(cold), *_medians(warm)])
    print(table(["case", "entry instructions", "module instructions", "nodes shown",
                 "cold s", "cold CPU s", "warm s", "warm CPU s"], rows))
    print(f"load average {os.getloadavg()[0]:.1f}: CPU seconds are what wall seconds come to "
          "on an idle machine")


def _medians(runs: list[tuple[float, float]]) -> list[float]:
    return [statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)]


if __name__ == "__main__":
    main()
