"""The JAX CPU demo: a real profile whose steps and input-bound steps are known in advance."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from xprof_widgets import demo
from xprof_widgets.profile.schema import HloProto, XSpace

STEPS = 8
FIXTURE = Path(__file__).parent.parent / "data" / "jax_cpu_demo.xplane.pb"  # demo --steps 8


@pytest.fixture(scope="module")
def demo_xplane(tmp_path_factory) -> Path:
    pytest.importorskip("jax")
    logdir = tmp_path_factory.mktemp("demo")
    out = subprocess.run(
        [sys.executable, "-m", "xprof_widgets.demo", str(logdir), "--steps", str(STEPS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    path = Path(out.stdout.strip().splitlines()[-1])
    assert path.parent.parent == logdir / "plugins" / "profile" and path.suffix == ".pb"
    return path


def _named(plane, line, names):
    out = {}
    for e in line.events:
        name = plane.event_metadata[e.metadata_id].name
        if name in names:
            stats = {plane.stat_metadata[s.metadata_id].name: s.int64_value for s in e.stats}
            out.setdefault(name, []).append((e.offset_ps, e.offset_ps + e.duration_ps, stats))
    return out


def test_importing_the_package_and_demo_module_does_not_import_jax():
    code = "import sys, xprof_widgets, xprof_widgets.demo; assert 'jax' not in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr  # the child's assert: jax was not imported


def test_input_bound_steps_are_documented():
    assert demo.input_bound_steps(STEPS) == [3, 7]
    assert demo.MIN_INPUT_SHARE_BOUND > demo.MAX_INPUT_SHARE_OTHER


@pytest.fixture(params=["fresh", "committed"])
def xplane(request) -> Path:
    return request.getfixturevalue("demo_xplane") if request.param == "fresh" else FIXTURE


def test_demo_profile_has_steps_with_known_input_shares(xplane):
    space = XSpace.FromString(xplane.read_bytes())
    assert {"/host:CPU", "/host:metadata", "Task Environment"} <= {p.name for p in space.planes}
    cpu = next(p for p in space.planes if p.name == "/host:CPU")
    python = next(line for line in cpu.lines if line.name == "python")
    found = _named(cpu, python, {"train", *demo.INPUT_NAMES})
    steps = found["train"]
    assert [s[2]["step_num"] for s in steps] == list(range(STEPS))
    assert all(s[2]["_r"] == 1 for s in steps)
    for name in demo.INPUT_NAMES:
        assert len(found[name]) == STEPS
        for (start, end, _), (s0, s1, _) in zip(found[name], steps, strict=True):
            assert s0 <= start <= end <= s1  # nested inside its step
    shares = [
        (i1 - i0) / (s1 - s0)
        for (i0, i1, _), (s0, s1, _) in zip(found["input_pipeline"], steps, strict=True)
    ]
    bound = demo.input_bound_steps(STEPS)
    stalled = [shares[i] for i in bound]
    others = [s for i, s in enumerate(shares) if i not in bound]
    # Whatever the load, the stalled steps wait for input longer than any other step...
    assert min(stalled) > max(others), shares
    if xplane == FIXTURE:  # ...and on a quiet machine by the margins the demo states. A fresh
        # run under the whole suite's load can miss them either way: a 10 ms step preempted
        # mid-input read 0.36; with 45 ms steps, the compute slowed 8-fold and a stalled one
        # read 0.46.
        assert min(stalled) >= demo.MIN_INPUT_SHARE_BOUND
        assert max(others) <= demo.MAX_INPUT_SHARE_OTHER


def test_demo_profile_has_xla_ops_and_the_train_step_hlo(xplane):
    space = XSpace.FromString(xplane.read_bytes())
    cpu = next(p for p in space.planes if p.name == "/host:CPU")
    names = {v.name: k for k, v in cpu.stat_metadata.items()}
    ops = [
        e
        for line in cpu.lines
        for e in line.events
        if any(s.metadata_id == names.get("hlo_op") for s in e.stats)
    ]
    assert len(ops) >= STEPS * 10
    meta = next(p for p in space.planes if p.name == "/host:metadata")
    protos = {}
    for md in meta.event_metadata.values():
        for s in md.stats:
            if meta.stat_metadata[s.metadata_id].name == "Hlo Proto":
                protos[md.name.split("(")[0]] = HloProto.FromString(s.bytes_value)
    train = protos["jit_train_step"]
    ba = train.buffer_assignment
    assert ba.logical_buffers and ba.buffer_allocations and ba.heap_simulator_traces
    buffers = {b.id for b in ba.logical_buffers}
    assert {e.buffer_id for t in ba.heap_simulator_traces for e in t.events} <= buffers
