"""Memory viewer benchmark: `analyze_memory` on synthetic modules, beside XProf's memory_viewer.

    python tests/bench/bench_memory.py [--buffers 10000 100000 300000] [--repeat 7]
                                       [--xprof-python PATH]

Each synthetic module has one instruction per logical buffer (f32[d,128] tiled (8,128), so
most buffers carry padding), 1% entry parameters, 1% outputs, one temporary allocation and a
heap-simulator trace of ~2 events per buffer (ALLOC, FREE, and a SHARE_WITH for every tenth
buffer) keeping about 64 buffers live. Prints one Markdown table, in milliseconds: the analysis
(summary ready) from serialized bytes (wall and CPU time: the CPU time is what a shared,
loaded machine still measures faithfully) and from a parsed `xla.HloProto`, then `timeline()` and
`buffers()` on it (best of --repeat, warm, compiled); a fresh process's first analysis (import
and the compiled-code cache load included); XProf's memory_viewer on the same module (fresh
process, after its tool listing wrote the module's proto), when xprof is installed.

A second table times the MemoryViewer widget switching to that module (from a small one in the
same profile, nothing cached: the module's scan, its memory spaces, the analysis and the
view's answer), returning to it (cached), and what the answer carries.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
from common import CACHE, measure, table, xprof_python
from xprof_memory_reference import metadata_xspace

from xprof_widgets.analysis import analyze_memory
from xprof_widgets.opening import open_profile
from xprof_widgets.profile.schema import HloProto, XSpace
from xprof_widgets.widgets._base import encode_response
from xprof_widgets.widgets.memory_viewer import MemoryViewer

F32, ALLOC, FREE, SHARE_WITH = 11, 0, 1, 2


def synthetic_module(n: int, seed: int = 0) -> bytes:
    """A serialized HloProto with n logical buffers (see the module doc)."""
    rng = np.random.default_rng(seed)
    proto = HloProto()
    module = proto.hlo_module
    module.name, module.id, module.entry_computation_name = f"jit_bench_step_{n}", 1, "main"
    comp = module.computations.add(name="main", id=1)
    ba = proto.buffer_assignment
    rows = rng.integers(1, 4096, n)
    sizes = ((rows + 7) // 8 * 8) * 128 * 4
    n_params = n_outputs = max(n // 100, 1)
    for i in range(n):
        opcode = "parameter" if i < n_params else "fusion"
        ins = comp.instructions.add(id=i + 1, name=f"{opcode}.{i}", opcode=opcode)
        ins.shape.element_type = F32
        ins.shape.dimensions.extend([int(rows[i]), 128])
        ins.shape.layout.minor_to_major.extend([1, 0])
        ins.shape.layout.tiles.add().dimensions.extend([8, 128])
        ins.metadata.op_name = f"jit(step)/layer{i % 97}/dot_general"
        ins.metadata.source_file, ins.metadata.source_line = "model.py", 10 + i % 500
        lb = ba.logical_buffers.add(id=i, size=int(sizes[i]))
        lb.defined_at.instruction_id = i + 1
    index = 0
    for i in range(n_params):
        alloc = ba.buffer_allocations.add(index=index, size=int(sizes[i]),
                                          is_entry_computation_parameter=True, parameter_number=i)
        alloc.assigned.add(logical_buffer_id=i, size=int(sizes[i]))
        index += 1
    for i in range(n - n_outputs, n):
        alloc = ba.buffer_allocations.add(index=index, size=int(sizes[i]), maybe_live_out=True)
        alloc.assigned.add(logical_buffer_id=i, size=int(sizes[i]))
        index += 1
    temps = range(n_params, n - n_outputs)
    temp = ba.buffer_allocations.add(index=index, size=int(sizes[temps.start:temps.stop].sum()))
    trace = ba.heap_simulator_traces.add(whole_module_simulation=True)
    live: list[int] = []
    for i in temps:
        temp.assigned.add(logical_buffer_id=i, size=int(sizes[i]))
        name = f"fusion.{i}"
        if i % 10 == 0 and live:  # shares a live buffer's memory
            trace.events.add(kind=SHARE_WITH, buffer_id=i, share_with_canonical_id=live[-1],
                             instruction_name=name)
        else:
            trace.events.add(kind=ALLOC, buffer_id=i, instruction_name=name)
        live.append(i)
        while len(live) > 64 or (len(live) > 8 and rng.random() < 0.5):
            gone = live.pop(int(rng.integers(0, len(live))))
            trace.events.add(kind=FREE, buffer_id=gone, instruction_name=name)
    for gone in live:
        trace.events.add(kind=FREE, buffer_id=gone, instruction_name="end")
    return proto.SerializeToString()


def cached_module(n: int) -> Path:
    path = CACHE / "memory" / f"module_{n}.hlo.pb"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(synthetic_module(n))
    return path


def best_ms(fn, repeat: int, clock=time.perf_counter) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append((clock() - start) * 1e3)
    return min(times), statistics.median(times)


FIRST_CALL = """
    t = time.perf_counter()
    from xprof_widgets.analysis import analyze_memory
    data = open({path!r}, "rb").read()
    analysis = analyze_memory(data)
    analysis.summary
    result = {{"seconds": time.perf_counter() - t}}
"""

XPROF = """
    import os, shutil, tempfile
    from xprof.convert import raw_to_tool_data
    run = os.path.join(tempfile.mkdtemp(), "plugins", "profile", "run")
    os.makedirs(run)
    path = os.path.join(run, "host.xplane.pb")
    shutil.copyfile({xplane!r}, path)
    raw_to_tool_data.xspace_to_tool_names([path])
    t = time.perf_counter()
    data, _ = raw_to_tool_data.xspace_to_tool_data(
        [path], "memory_viewer", {{"module_name": {module!r}, "memory_space": "0"}})
    result = {{"seconds": time.perf_counter() - t, "peak_mib": json.loads(data)["peakHeapMib"]}}
    shutil.rmtree(os.path.dirname(os.path.dirname(os.path.dirname(run))))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buffers", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--xprof-python")
    args = parser.parse_args()
    xprof = xprof_python(args.xprof_python)
    rows = []
    for n in args.buffers:
        path = cached_module(n)
        data = path.read_bytes()
        message = HloProto.FromString(data)
        analysis = analyze_memory(data)  # compiles (or loads) the scanners
        events = analysis.summary["program_steps"]
        from_bytes = best_ms(lambda: analyze_memory(data).summary, args.repeat)  # noqa: B023
        cpu = best_ms(lambda: analyze_memory(data).summary, args.repeat,  # noqa: B023
                      time.process_time)[0]
        from_message = best_ms(lambda: analyze_memory(message).summary, args.repeat)  # noqa: B023
        timeline = best_ms(lambda: analyze_memory(data)._timeline, args.repeat)  # noqa: B023
        buffers = best_ms(lambda: analyze_memory(data)._buffers, args.repeat)  # noqa: B023
        first = measure(FIRST_CALL.format(path=str(path)))["seconds"]
        x_s = x_peak = None
        if xprof:
            xplane = path.with_suffix(".xplane.pb")
            name = f"{message.hlo_module.name}(1)"
            xplane.write_bytes(metadata_xspace({name: data}))
            theirs = measure(XPROF.format(xplane=str(xplane), module=name), xprof)
            x_s, x_peak = theirs["seconds"], theirs["peak_mib"]
            assert abs(x_peak - analysis.summary["peak_mib"]) < 1e-6 * x_peak, (x_peak, n)
        rows.append([n, events, len(data) / 2**20, *from_bytes, cpu, *from_message,
                     timeline[0] - from_bytes[0], buffers[0] - from_bytes[0], first * 1e3,
                     None if x_s is None else x_s * 1e3, analysis.summary["peak_mib"]])
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    print(table(["logical buffers", "events", "proto MiB", "bytes ms (best)", "bytes ms (median)",
                 "bytes CPU ms (best)", "message ms (best)", "message ms (median)",
                 "+timeline ms", "+buffers ms", "fresh process ms", "XProf memory_viewer ms",
                 "peak MiB"], rows))
    print()
    print(table(["logical buffers", "switch ms (best)", "switch ms (median)",
                 "switch CPU ms (best)", "back (cached) ms", "curve points", "bars",
                 "answer KiB"], [widget_switch_row(n, args.repeat) for n in args.buffers]))


# ---- the MemoryViewer widget ------------------------------------------------------------------
def widget_profile(n: int) -> Path:
    """A profile holding a tiny module and the n-buffer one (an event, so that it opens)."""
    path = CACHE / "memory" / f"widget_{n}.xplane.pb"
    if not path.exists():
        space = XSpace.FromString(metadata_xspace({
            "jit_tiny_step(1)": synthetic_module(20), f"jit_bench_step_{n}(2)":
                cached_module(n).read_bytes()}))
        plane = space.planes.add(id=2, name="/host:CPU")
        plane.event_metadata[1].id = 1
        plane.event_metadata[1].name = "step"
        plane.lines.add(id=1, name="python").events.add(metadata_id=1, duration_ps=1000)
        path.write_bytes(space.SerializeToString())
    return path


def widget_switch_row(n: int, repeat: int) -> list:
    """Python time of a switch in the widget: trait set and the view's `view` request."""
    profile = open_profile(widget_profile(n))
    big = f"jit_bench_step_{n}"

    def switch(clock):
        widget = MemoryViewer(profile, module="jit_tiny_step")  # nothing of the big one cached
        start = clock()
        widget.module = big
        answer = widget._call("view", {})
        return (clock() - start) * 1e3, widget, answer

    switch(time.perf_counter)  # compiled code and chart templates warm
    walls = [switch(time.perf_counter)[0] for _ in range(repeat)]
    cpu = min(switch(time.process_time)[0] for _ in range(repeat))
    _, widget, (content, buffers) = switch(time.perf_counter)
    widget.module = "jit_tiny_step"
    start = time.perf_counter()
    widget.module = big
    widget._call("view", {})
    back = (time.perf_counter() - start) * 1e3
    sent = sum(len(json.dumps(m)) + sum(b.nbytes for b in parts)
               for m, parts in encode_response(1, content, buffers))
    return [n, min(walls), statistics.median(walls), cpu, back, content["curve"]["points"],
            max(len(o) for o in content["bars"]["orders"].values()), sent / 1024]


if __name__ == "__main__":
    main()
