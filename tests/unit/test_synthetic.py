"""The synthetic profiles: valid XSpace, the promised shape, consistent links and HLO protos."""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from xprof_widgets.profile.schema import HloProto, XLine, XSpace
from xprof_widgets.synthetic import (
    EVAL_EVERY,
    HTML_EVENT_NAME,
    INPUT_BOUND_EVERY,
    generate,
    write_synthetic,
)
from xprof_widgets.synthetic.__main__ import main as cli_main
from xprof_widgets.synthetic.xspace import Stat, encode_events

DATA = Path(__file__).parent.parent / "data"
TPU_LINES = ["Steps", "XLA Modules", "XLA Ops", "Async XLA Ops", "XLA TraceMe"]
GPU_LINES = [
    "Stream #12(Compute)",
    "Stream #13(MemcpyH2D)",
    "Stream #14(MemcpyD2H)",
    "Stream #15(Nccl)",
]


def _space(path: Path) -> XSpace:
    return XSpace.FromString(Path(path).read_bytes())


def _plane(space: XSpace, name: str):
    return next(p for p in space.planes if p.name == name)


def _stat_value(plane, stat):
    kind = stat.WhichOneof("value")
    value = getattr(stat, kind)
    return plane.stat_metadata[value].name if kind == "ref_value" else value


def _events(plane, line):
    """(name, display name, start ps, end ps, stats dict) per event, in file order."""
    out = []
    for e in line.events:
        md = plane.event_metadata[e.metadata_id]
        start = line.timestamp_ns * 1000 + e.offset_ps
        stats = {plane.stat_metadata[s.metadata_id].name: _stat_value(plane, s) for s in e.stats}
        out.append((md.name, md.display_name, start, start + e.duration_ps, stats))
    return out


def _metadata_stats(plane, md):
    return {plane.stat_metadata[s.metadata_id].name: _stat_value(plane, s) for s in md.stats}


@pytest.fixture(scope="module")
def tpu(tmp_path_factory) -> Path:
    return write_synthetic(tmp_path_factory.mktemp("tpu") / "tpu.xplane.pb", 20_000, "tpu", seed=3)


@pytest.fixture(scope="module")
def gpu(tmp_path_factory) -> Path:
    return write_synthetic(tmp_path_factory.mktemp("gpu") / "gpu.xplane.pb", 20_000, "gpu", seed=3)


def test_event_encoder_matches_upb_byte_for_byte():
    rng = np.random.default_rng(0)
    n = 500
    md = rng.integers(1, 300, n)
    offset = rng.integers(0, 2**50, n)
    duration = rng.integers(0, 2, n) * rng.integers(0, 2**40, n)  # zeros are left out
    signed = rng.integers(-(2**62), 2**62, n)
    unsigned = rng.integers(0, 2**63, n).astype(np.uint64) * np.uint64(2)
    real = rng.normal(size=n)
    codes = rng.integers(0, 3, n)
    table = ["a", HTML_EVENT_NAME, "x" * 200]
    present = rng.random(n) < 0.5
    encoded = encode_events(
        md,
        offset,
        duration,
        [
            Stat(5, signed),
            Stat(6, unsigned, "uint64", present=present),
            Stat(7, real, "double"),
            Stat(8, codes, "str", table),
            Stat(9, codes + 1, "ref"),
        ],
    )
    line = XLine()
    for i in range(n):
        e = line.events.add(
            metadata_id=int(md[i]), offset_ps=int(offset[i]), duration_ps=int(duration[i])
        )
        e.stats.add(metadata_id=5, int64_value=int(signed[i]))
        if present[i]:
            e.stats.add(metadata_id=6, uint64_value=int(unsigned[i]))
        e.stats.add(metadata_id=7, double_value=float(real[i]))
        e.stats.add(metadata_id=8, str_value=table[codes[i]])
        e.stats.add(metadata_id=9, ref_value=int(codes[i] + 1))
    assert encoded == line.SerializeToString()


def test_tpu_planes_lines_and_device_stats(tpu):
    space = _space(tpu)
    names = [p.name for p in space.planes]
    assert names == [f"/device:TPU:{d}" for d in range(4)] + [
        "/host:CPU",
        "/host:metadata",
        "Task Environment",
    ]
    assert list(space.hostnames) == ["t1v-n-00000003-w-0"]
    for d in range(4):
        plane = _plane(space, f"/device:TPU:{d}")
        assert [line.name for line in plane.lines] == TPU_LINES
        assert all(line.timestamp_ns == 0 for line in plane.lines)
        assert all(len(line.events) for line in plane.lines)
        stats = {
            plane.stat_metadata[s.metadata_id].name: _stat_value(plane, s) for s in plane.stats
        }
        assert stats["device_type_string"] == "TPU v6 Lite"
        assert stats["peak_teraflops_per_second"] == 918.0
        assert stats["peak_hbm_bw_gigabytes_per_second"] > 1000
    cpu = _plane(space, "/host:CPU")
    assert [line.name for line in cpu.lines] == [
        "python",
        "tf_data_private_threadpool/1003",
        "pjrt-tpu-tasks/1005",
    ]
    assert all(line.timestamp_ns > 0 for line in cpu.lines)  # relative host lines
    env = _plane(space, "Task Environment")
    times = {env.stat_metadata[s.metadata_id].name: s.uint64_value for s in env.stats}
    assert 0 < times["profile_stop_time"] - times["profile_start_time"] < 60 * 10**9


def test_tpu_ops_carry_hlo_text_and_cost_stats(tpu):
    space = _space(tpu)
    plane = _plane(space, "/device:TPU:0")
    ops = next(line for line in plane.lines if line.name == "XLA Ops")
    categories = collections.Counter()
    for md_id in {e.metadata_id for e in ops.events}:
        md = plane.event_metadata[md_id]
        assert md.name.startswith(f"%{md.display_name} = ")
        stats = _metadata_stats(plane, md)
        assert {"hlo_category", "flops", "bytes_accessed", "program_id"} <= stats.keys()
        assert stats["bytes_accessed"] > 0
        categories[stats["hlo_category"]] += 1
    assert {
        "convolution",
        "convolution fusion",
        "loop fusion",
        "data formatting",
        "all-reduce",
    } <= categories.keys()
    modules = next(line for line in plane.lines if line.name == "XLA Modules")
    module_names = {plane.event_metadata[e.metadata_id].name for e in modules.events}
    assert {n.split("(")[0] for n in module_names} == {"jit_train_step", "jit_eval_step"}


def _check_nesting(events, where):
    """Events sorted by start; each one either nests fully in the open one or follows it."""
    starts = [e[2] for e in events]
    assert starts == sorted(starts), where
    stack = []
    for name, _, start, end, _ in events:
        assert end >= start, where
        while stack and start >= stack[-1][1]:
            stack.pop()
        assert not stack or end <= stack[-1][1], f"{where}: {name} overlaps {stack[-1][0]}"
        stack.append((name, end))


@pytest.mark.parametrize("kind", ["tpu", "gpu"])
def test_lines_are_sorted_and_nest_properly(kind, tpu, gpu):
    space = _space(tpu if kind == "tpu" else gpu)
    checked = 0
    for plane in space.planes:
        for line in plane.lines:
            _check_nesting(_events(plane, line), f"{plane.name} / {line.name}")
            checked += 1
    assert checked >= 10


def test_host_steps_input_pipeline_and_launch_flows(tpu):
    space = _space(tpu)
    cpu = _plane(space, "/host:CPU")
    python = _events(cpu, cpu.lines[0])
    steps = [e for e in python if e[0] == "train"]
    assert [e[4]["step_num"] for e in steps] == list(range(len(steps)))
    assert all(e[4]["_r"] == 1 for e in steps)
    waits = [e for e in python if e[0] == "Iterator::Prefetch"]
    assert len(waits) == len(steps)
    share = np.array([(w[3] - w[2]) / (s[3] - s[2]) for w, s in zip(waits, steps)])
    bound = np.arange(len(steps)) % INPUT_BOUND_EVERY == INPUT_BOUND_EVERY - 1
    assert bound.sum() >= 3
    assert share[bound].min() > 0.6 and share[~bound].max() < 0.1
    reads = [e for e in _events(cpu, cpu.lines[1]) if e[0].endswith("::TFRecord")]
    assert len(reads) == len(steps)
    # Each DoEnqueueProgram (_pt=12, _p) precedes exactly one device module with _ct=12, _c.
    enqueues = {e[4]["_p"]: e for e in _events(cpu, cpu.lines[2])}
    modules = []
    for d in range(4):
        plane = _plane(space, f"/device:TPU:{d}")
        modules += _events(plane, next(line for line in plane.lines if line.name == "XLA Modules"))
    assert len(modules) == len(enqueues) == 4 * (len(steps) + len(steps) // EVAL_EVERY)
    for name, _, start, _, stats in modules:
        assert stats["_ct"] == 12
        host = enqueues[stats["_c"]]
        assert host[4]["_pt"] == 12 and host[3] <= start


def test_async_ops_link_start_async_and_done_by_flow(tpu):
    space = _space(tpu)
    for d in range(4):
        plane = _plane(space, f"/device:TPU:{d}")
        chains = collections.defaultdict(list)
        for line in plane.lines:
            for name, display, start, end, stats in _events(plane, line):
                if "flow" in stats:
                    flow = stats["flow"]
                    chains[flow >> 2].append((start, flow & 3, line.name, display, end, stats))
        assert chains
        for chain in chains.values():
            chain.sort()
            assert [(c[1], c[2]) for c in chain] == [
                (2, "XLA Ops"),
                (3, "Async XLA Ops"),
                (1, "XLA Ops"),
            ]
            (_, _, _, start_op, start_end, _), middle, done = chain
            assert start_op.endswith("-start.0") or "-start." in start_op
            assert middle[5]["hlo_op"] == done[3] and middle[5]["_a"] == 1
            assert start_end <= middle[0] and middle[4] <= done[0]


def test_gpu_planes_streams_and_correlation(gpu):
    space = _space(gpu)
    assert [p.name for p in space.planes] == [f"/device:GPU:{d}" for d in range(4)] + [
        "/host:CUPTI",
        "/host:CPU",
        "/host:metadata",
        "Task Environment",
    ]
    cupti = _plane(space, "/host:CUPTI")
    launches = {}
    for line in cupti.lines:
        for name, _, start, end, stats in _events(cupti, line):
            assert name.startswith(("cuLaunchKernel", "cuMemcpy"))
            launches[stats["correlation_id"]] = (start, end)
    activities = 0
    for d in range(4):
        plane = _plane(space, f"/device:GPU:{d}")
        assert [line.name for line in plane.lines] == GPU_LINES
        stats = {
            plane.stat_metadata[s.metadata_id].name: _stat_value(plane, s) for s in plane.stats
        }
        assert stats["clock_rate"] == 1_980_000 and stats["core_count"] == 132
        assert stats["memory_bandwidth"] > 1e12
        assert (stats["compute_cap_major"], stats["compute_cap_minor"]) == (9, 0)
        for line in plane.lines:
            for name, _, start, _, s in _events(plane, line):
                assert launches.pop(s["correlation_id"])[1] <= start
                if "Memcpy" not in line.name:
                    assert s["hlo_module"] in ("jit_train_step", "jit_eval_step")
                    assert "grid:" in s["kernel_details"]
                activities += 1
    assert not launches  # every launch has its activity
    assert activities > 8000


def _check_buffer_assignment(hlo) -> None:
    ba = hlo.buffer_assignment
    buffers = {b.id: b for b in ba.logical_buffers}
    assigned = collections.Counter()
    placement = {}
    for alloc in ba.buffer_allocations:
        for a in alloc.assigned:
            assigned[a.logical_buffer_id] += 1
            buf = buffers[a.logical_buffer_id]
            assert a.size == buf.size and buf.color == alloc.color
            assert 0 <= a.offset and a.offset + a.size <= alloc.size
            placement[a.logical_buffer_id] = (alloc.index, a.offset, a.size)
    assert set(assigned) == set(buffers) and max(assigned.values()) == 1
    names = {i.name for c in hlo.hlo_module.computations for i in c.instructions}
    assert {b.defined_at.instruction_name for b in buffers.values()} <= names
    assert hlo.buffer_assignment.heap_simulator_traces
    for trace in ba.heap_simulator_traces:
        canonical, refs, live, freed = {}, collections.Counter(), {}, set()
        for ev in trace.events:
            alloc_index, offset, size = placement[ev.buffer_id]
            assert alloc_index == trace.buffer_allocation_index
            if ev.kind == 0:  # ALLOC: its bytes overlap no live buffer's
                assert ev.buffer_id not in canonical
                for other_offset, other_size in live.values():
                    assert offset + size <= other_offset or other_offset + other_size <= offset
                canonical[ev.buffer_id] = ev.buffer_id
                live[ev.buffer_id] = (offset, size)
                refs[ev.buffer_id] += 1
            elif ev.kind == 2:  # SHARE_WITH: the same bytes as a live buffer
                assert ev.buffer_id not in canonical and ev.share_with_canonical_id in live
                assert placement[ev.share_with_canonical_id][1:] == (offset, size)
                canonical[ev.buffer_id] = ev.share_with_canonical_id
                refs[ev.share_with_canonical_id] += 1
            else:  # FREE: the bytes go when the last sharer is freed
                assert ev.kind == 1 and ev.buffer_id in canonical and ev.buffer_id not in freed
                freed.add(ev.buffer_id)
                refs[canonical[ev.buffer_id]] -= 1
                if refs[canonical[ev.buffer_id]] == 0:
                    live.pop(canonical[ev.buffer_id])
        assert freed == set(canonical) and not live, "every buffer is freed"


@pytest.mark.parametrize("kind", ["tpu", "gpu"])
def test_hlo_protos_match_the_ops_and_their_buffers(kind, tpu, gpu):
    space = _space(tpu if kind == "tpu" else gpu)
    meta = _plane(space, "/host:metadata")
    protos = {}
    for key, md in meta.event_metadata.items():
        stats = {meta.stat_metadata[s.metadata_id].name: s for s in md.stats}
        program_id = stats["program_id"].uint64_value
        assert key == md.id == (program_id - 2**64 if program_id >= 2**63 else program_id)
        hlo = HloProto.FromString(stats["Hlo Proto"].bytes_value)
        assert md.name == f"{hlo.hlo_module.name}({program_id})"
        protos[program_id] = hlo
        _check_buffer_assignment(hlo)
    assert len(protos) == 2 and max(protos) >= 2**63  # one id needs the unsigned reading
    shares = sum(
        e.kind == 2
        for h in protos.values()
        for t in h.buffer_assignment.heap_simulator_traces
        for e in t.events
    )
    assert shares > 0
    if kind == "tpu":
        plane = _plane(space, "/device:TPU:0")
        for md in plane.event_metadata.values():
            stats = _metadata_stats(plane, md)
            if "program_id" in stats:
                hlo = protos[stats["program_id"]]
                entry = next(
                    c
                    for c in hlo.hlo_module.computations
                    if c.id == hlo.hlo_module.entry_computation_id
                )
                assert md.display_name in {i.name for i in entry.instructions}


def test_event_count_is_close_and_reported(tmp_path, capsys):
    for kind, n in (("tpu", 5_000), ("gpu", 8_000), ("tpu", 60_000)):
        run = generate(tmp_path / f"{kind}{n}.xplane.pb", n, kind)
        space = _space(run.path)
        total = sum(len(line.events) for p in space.planes for line in p.lines)
        assert total == run.events
        assert abs(total - n) / n < 0.1, (kind, n, total)
    cli_main([str(tmp_path / "cli.xplane.pb"), "--events", "3e3", "--kind", "gpu"])
    out = capsys.readouterr().out
    count = int(out.split("\t")[1].split()[0])
    space = _space(tmp_path / "cli.xplane.pb")
    assert count == sum(len(line.events) for p in space.planes for line in p.lines)


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    a = write_synthetic(tmp_path / "a.xplane.pb", 4000, "tpu", seed=1).read_bytes()
    b = write_synthetic(tmp_path / "b.xplane.pb", 4000, "tpu", seed=1).read_bytes()
    c = write_synthetic(tmp_path / "c.xplane.pb", 4000, "tpu", seed=2).read_bytes()
    assert a == b and a != c


def test_multi_host_run_goes_into_a_logdir(tmp_path):
    run_dir = write_synthetic(tmp_path, 9000, "tpu", hosts=3)
    files = sorted(run_dir.glob("*.xplane.pb"))
    assert run_dir.parent == tmp_path / "plugins" / "profile"
    assert [f.name for f in files] == [f"t1v-n-00000000-w-{h}.xplane.pb" for h in range(3)]
    assert {tuple(_space(f).hostnames) for f in files} == {
        (f.name.removesuffix(".xplane.pb"),) for f in files
    }
    with pytest.raises(ValueError, match="directory"):
        write_synthetic(tmp_path / "one.xplane.pb", 9000, "tpu", hosts=2)


def test_html_event_only_on_request(tmp_path):
    def names(path):
        cpu = _plane(_space(path), "/host:CPU")
        return {md.name for md in cpu.event_metadata.values()}

    assert HTML_EVENT_NAME in names(
        write_synthetic(tmp_path / "h.xplane.pb", 3000, html_event=True)
    )
    assert HTML_EVENT_NAME not in names(write_synthetic(tmp_path / "n.xplane.pb", 3000))


@pytest.mark.parametrize("kind", ["tpu", "gpu"])
def test_committed_fixture_is_what_the_generator_writes(kind, tmp_path):
    """Regenerate with `python -m xprof_widgets.synthetic tests/data/synthetic_<kind>.xplane.pb
    --events 20000 --kind <kind>` after changing the generator on purpose."""
    fixture = DATA / f"synthetic_{kind}.xplane.pb"
    fresh = write_synthetic(tmp_path / "x.xplane.pb", 20_000, kind)
    assert fixture.stat().st_size < 1_000_000
    assert fresh.read_bytes() == fixture.read_bytes()


def test_committed_pytorch_trace_is_a_real_chrome_trace():
    """torch 2.13 CPU, `torch.profiler.profile(...).export_chrome_trace` of a tiny MLP, gzipped."""
    path = DATA / "torch_tiny_mlp.pt.trace.json.gz"
    assert path.stat().st_size < 1_000_000
    trace = json.loads(gzip.decompress(path.read_bytes()))
    events = trace["traceEvents"]
    phases = collections.Counter(e.get("ph") for e in events)
    assert phases["X"] > 400 and phases["s"] == phases["f"] > 0 and phases["M"] > 0
    names = {e["name"] for e in events if e.get("ph") == "X"}
    assert {"ProfilerStep#1", "load_batch", "train_step", "aten::addmm"} <= names
    flows = collections.Counter(e["id"] for e in events if e.get("ph") in ("s", "f"))
    assert set(flows.values()) == {2}  # every flow has its start and its finish
