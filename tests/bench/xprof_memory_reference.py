r"""Regenerates the XProf memory-viewer reference values the memory tests compare against.

XProf's memory viewer (pip `xprof`, 2.24.2 when recorded) runs in its own virtual environment,
never in the project's. The steps:

    python -m venv /tmp/xprofvenv && /tmp/xprofvenv/bin/pip install xprof==2.24.2
    .venv/bin/python tests/bench/xprof_memory_reference.py record \
        --xprof-python /tmp/xprofvenv/bin/python

`record` (run with the project's .venv, which has JAX) writes into tests/data/expected/:
- memory_jax_cpu_mlp.hlo.xplane.pb: the `/host:metadata` plane (HLO protos only) of a JAX CPU
  profile of a jitted MLP train step, made by `make-jax-profile`;
- memory_synthetic.hlo.xplane.pb: modules built here to cover padding, tiling, sub-byte types,
  nested tuples, SHARE_WITH and every allocation type;
- memory_<name>.json for those two and the TPU fixture: for every module and memory space,
  XProf's peak, timeline and buffers at the peak (run through `xprof` in a temporary logdir
  copy; XProf writes caches next to the profile).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPECTED = os.path.join(ROOT, "tests", "data", "expected")
TPU_FIXTURE = os.path.join(ROOT, "tests", "data", "tpu_v6e_inference.xplane.pb")
HLO_PROTO_STAT = "Hlo Proto"

# Compiled under a fixed file name so the HLO metadata does not depend on the checkout path.
MLP_SOURCE = '''
import jax, jax.numpy as jnp

def init(key, sizes):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (a, b)) * 0.01, jnp.zeros(b)))
    return params

def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    return jnp.mean((h @ w + b - y) ** 2)

@jax.jit
def train_step(params, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value

def run(logdir, steps=3):
    params = init(jax.random.PRNGKey(0), [512, 1024, 1024, 256])
    x, y = jnp.ones((128, 512)), jnp.ones((128, 256))
    params, value = train_step(params, x, y)
    value.block_until_ready()
    with jax.profiler.trace(logdir):
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                params, value = train_step(params, x, y)
        value.block_until_ready()
'''


def make_jax_profile(logdir: str) -> str:
    """Profiles the MLP train step on JAX's CPU backend; returns the xplane.pb path."""
    namespace: dict = {}
    exec(compile(MLP_SOURCE, "mlp_train.py", "exec"), namespace)  # noqa: S102 - our own code
    namespace["run"](logdir)
    (path,) = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    return path


def _schema():
    sys.path.insert(0, ROOT)
    from xprof_widgets.profile import schema

    return schema


def hlo_protos(xplane_path: str) -> dict[str, bytes]:
    """`name(program_id)` -> serialized HloProto, from a profile's `/host:metadata` plane."""
    schema = _schema()
    with open(xplane_path, "rb") as f:
        space = schema.XSpace.FromString(f.read())
    out = {}
    for plane in space.planes:
        if plane.name != "/host:metadata":
            continue
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        for metadata in plane.event_metadata.values():
            for stat in metadata.stats:
                if names.get(stat.metadata_id) == HLO_PROTO_STAT:
                    out[metadata.name] = bytes(stat.bytes_value)
    return out


def metadata_xspace(protos: dict[str, bytes]) -> bytes:
    """An XSpace holding only a `/host:metadata` plane with these HLO protos."""
    schema = _schema()
    space = schema.XSpace()
    plane = space.planes.add(id=1, name="/host:metadata")
    plane.stat_metadata[1].id = 1
    plane.stat_metadata[1].name = HLO_PROTO_STAT
    for name, data in protos.items():
        program_id = int(name[name.rindex("(") + 1:-1])
        key = program_id - (1 << 64) if program_id >= 1 << 63 else program_id  # int64 map key
        metadata = plane.event_metadata[key]
        metadata.id = key
        metadata.name = name
        metadata.stats.add(metadata_id=1, bytes_value=data)
    return space.SerializeToString()


# ---- synthetic modules ---------------------------------------------------------------------
def _shape(shape, element_type, dims, minor_to_major=None, tiles=(), bits=0, space=0):
    shape.element_type = element_type
    shape.dimensions.extend(dims)
    if minor_to_major is not None:
        shape.layout.minor_to_major.extend(minor_to_major)
        for tile in tiles:
            shape.layout.tiles.add().dimensions.extend(tile)
        shape.layout.element_size_in_bits = bits
        shape.layout.memory_space = space
    return shape


class _Builder:
    """A one-computation module with buffer assignment, written field by field."""

    def __init__(self, name: str, program_id: int):
        self.proto = _schema().HloProto()
        module = self.proto.hlo_module
        module.name, module.id, module.entry_computation_name = name, program_id, "main"
        self.comp = module.computations.add(name="main", id=1)
        self.ba = self.proto.buffer_assignment
        self.trace = None

    def instruction(self, iid, name, opcode, line=0):
        ins = self.comp.instructions.add(id=iid, name=name, opcode=opcode)
        ins.metadata.op_name = f"jit(step)/{name}"
        if line:
            ins.metadata.source_file, ins.metadata.source_line = "model.py", line
        return ins

    def buffer(self, lid, size, iid, index=(), color=0):
        lb = self.ba.logical_buffers.add(id=lid, size=size, color=color)
        lb.defined_at.instruction_id = iid
        lb.defined_at.shape_index.extend(index)

    def allocation(self, index, size, lids, color=0, **flags):
        alloc = self.ba.buffer_allocations.add(index=index, size=size, color=color, **flags)
        sizes = {lb.id: lb.size for lb in self.ba.logical_buffers}
        for lid in lids:
            alloc.assigned.add(logical_buffer_id=lid, size=sizes[lid])

    def event(self, kind, lid, name, share=0):
        if self.trace is None:
            self.trace = self.ba.heap_simulator_traces.add(whole_module_simulation=True)
        self.trace.events.add(kind=kind, buffer_id=lid, instruction_name=name,
                              computation_name="main", share_with_canonical_id=share)


def synthetic_modules() -> dict[str, bytes]:
    """Edge cases with hand-checkable figures (see tests/unit/test_memory.py)."""
    ALLOC, FREE, SHARE = 0, 1, 2
    F32, S32, BF16, S4, PRED, TUPLE = 11, 4, 16, 21, 1, 13
    b = _Builder("jit_padded_step", 7)
    _shape(b.instruction(1, "p0", "parameter", 10).shape, F32, [100, 100], [1, 0], [(8, 128)])
    _shape(b.instruction(2, "k", "constant", 11).shape, S32, [10000], [0])
    _shape(b.instruction(3, "a", "fusion", 12).shape, BF16, [1000, 3], [1, 0], [(8, 128), (2, 1)])
    _shape(b.instruction(4, "b", "fusion", 13).shape, S4, [100000], [0], [(1024,)], bits=4)
    t = b.instruction(5, "t", "tuple", 14).shape
    t.element_type = TUPLE
    _shape(t.tuple_shapes.add(), F32, [64, 64], [1, 0])
    inner = t.tuple_shapes.add()
    inner.element_type = TUPLE
    _shape(inner.tuple_shapes.add(), PRED, [5000], [0])
    _shape(inner.tuple_shapes.add(), F32, [7000], [0])
    _shape(b.instruction(6, "d", "fusion", 15).shape, F32, [300, 300], [1, 0], [(8, 128)])
    _shape(b.instruction(7, "e", "fusion", 16).shape, F32, [300, 300], [1, 0], [(8, 128)])
    _shape(b.instruction(8, "s", "fusion").shape, F32, [10], [0])
    for lid, size, iid, index in [(0, 104 * 128 * 4, 1, ()), (1, 40000, 2, ()),
                                  (2, 1000 * 128 * 4 * 2, 3, ()), (3, 51200, 4, ()),
                                  (4, 16384, 5, (0,)), (5, 8192, 5, (1, 0)),
                                  (6, 28672, 5, (1, 1)), (7, 16, 5, ()),
                                  (8, 304 * 384 * 4, 6, ()), (9, 304 * 384 * 4, 7, ()),
                                  (10, 20000, 8, ())]:
        b.buffer(lid, size, iid, index)
    b.allocation(0, 104 * 128 * 4 + 4096, [0], is_entry_computation_parameter=True)
    b.allocation(1, 40000, [1], is_constant=True)
    b.allocation(2, 16, [7], maybe_live_out=True, is_tuple=True)
    b.allocation(3, 20000, [10], is_thread_local=True)
    b.allocation(4, 10**7, [2, 3, 4, 5, 6, 8, 9])
    for kind, lid, name, share in [
            (ALLOC, 2, "a", 0), (ALLOC, 3, "b", 0), (ALLOC, 8, "d", 0), (FREE, 8, "d", 0),
            (SHARE, 9, "e", 8), (ALLOC, 4, "t", 0), (ALLOC, 5, "t", 0), (ALLOC, 6, "t", 0),
            (FREE, 2, "x", 0), (FREE, 3, "x", 0), (FREE, 9, "x", 0), (FREE, 4, "x", 0),
            (FREE, 5, "x", 0), (FREE, 6, "x", 0)]:
        b.event(kind, lid, name, share)
    padded = b.proto.SerializeToString()

    # Two spaces; a SHARE_WITH onto a live buffer; a buffer freed before its sharer; a peak
    # reached twice (the first one counts); a freed buffer revived by a sharer that is freed
    # while another sharer keeps the memory to the end.
    b = _Builder("jit_spaces", 9)
    for iid in (1, 2, 3, 4, 5, 6, 8, 9, 10):
        _shape(b.instruction(iid, f"f{iid}", "fusion", iid).shape, F32, [64, 1024], [1, 0])
    _shape(b.instruction(7, "v", "fusion").shape, F32, [8, 1024], [1, 0], space=1)
    for lid in (1, 2, 3, 4, 5, 6, 8, 9, 10):
        b.buffer(lid, 262144, lid)
    b.buffer(7, 32768, 7, color=1)
    b.allocation(0, 262144, [1], is_entry_computation_parameter=True)
    b.allocation(1, 1 << 20, [2, 3, 4, 5, 6, 8, 9, 10])
    b.allocation(2, 32768, [7], color=1)
    for kind, lid, name, share in [
            (ALLOC, 2, "f2", 0), (SHARE, 3, "f3", 2), (ALLOC, 4, "f4", 0), (FREE, 2, "f4", 0),
            (ALLOC, 5, "f5", 0), (FREE, 3, "f5", 0), (ALLOC, 6, "f6", 0), (FREE, 4, "f6", 0),
            (FREE, 5, "f6", 0), (FREE, 6, "f6", 0), (SHARE, 8, "f8", 6), (SHARE, 9, "f9", 6),
            (FREE, 8, "f9", 0), (ALLOC, 10, "f10", 0), (FREE, 10, "f10", 0)]:
        b.event(kind, lid, name, share)
    trace = b.ba.heap_simulator_traces.add(whole_module_simulation=True)
    for kind in (ALLOC, FREE):
        trace.events.add(kind=kind, buffer_id=7, instruction_name="v", computation_name="main")
    spaces = b.proto.SerializeToString()
    return {"jit_padded_step(7)": padded, "jit_spaces(9)": spaces}


# ---- XProf --------------------------------------------------------------------------------
def run_xprof(xplane_path: str) -> dict:
    """XProf's memory viewer for every module and memory space of a profile, compacted.

    Runs in the xprof virtual environment. Modules are listed from the HLO protos XProf itself
    extracts into the (temporary) logdir.
    """
    from xprof.convert import raw_to_tool_data

    schema = _schema()
    out = {}
    with tempfile.TemporaryDirectory() as logdir:
        run = os.path.join(logdir, "plugins", "profile", "run")
        os.makedirs(run)
        path = os.path.join(run, "host.xplane.pb")
        shutil.copyfile(xplane_path, path)
        raw_to_tool_data.xspace_to_tool_names([path])  # writes <module>.hlo_proto.pb files
        for proto_path in sorted(glob.glob(os.path.join(run, "*.hlo_proto.pb"))):
            module = os.path.basename(proto_path)[:-len(".hlo_proto.pb")]
            with open(proto_path, "rb") as f:
                hlo = schema.HloProto.FromString(f.read())
            ba = hlo.buffer_assignment
            colors = sorted({lb.color for lb in ba.logical_buffers}
                            | {a.color for a in ba.buffer_allocations if a.size})
            for color in colors:
                data, _ = raw_to_tool_data.xspace_to_tool_data(
                    [path], "memory_viewer", {"module_name": module, "memory_space": str(color)})
                out[f"{module}|{schema.MEMORY_SPACES[color]}"] = _compact(json.loads(data))
    return out


def _compact(result: dict) -> dict:
    def source(obj):
        info = obj.get("sourceInfo") or {}
        return f"{info['fileName']}:{info.get('lineNumber', 0)}" if info.get("fileName") else ""

    return {
        "peak_heap_mib": result.get("peakHeapMib", 0.0),
        "peak_unpadded_heap_mib": result.get("peakUnpaddedHeapMib", 0.0),
        "peak_heap_size_position": result.get("peakHeapSizePosition", 0),
        "heap_sizes_mib": result.get("heapSizes", []),
        "unpadded_heap_sizes_mib": result.get("unpaddedHeapSizes", []),
        "hlo_instruction_names": result.get("hloInstructionNames", []),
        "indefinite_buffer_allocation_mib": result.get("indefiniteBufferAllocationMib", 0.0),
        "logical_buffer_spans": {k: [v.get("start", 0), v.get("limit", 0)]
                                 for k, v in result.get("logicalBufferSpans", {}).items()},
        "max_heap": [{
            "logical_buffer_id": o.get("logicalBufferId", 0),
            "instruction_name": o.get("instructionName", ""),
            "size_mib": o.get("logicalBufferSizeMib", 0.0),
            "unpadded_mib": o.get("unpaddedShapeMib", 0.0),
            "group": o.get("groupName", ""),
            "shape": o.get("shapeString", ""),
            "op_name": o.get("tfOpName", ""),
            "opcode": o.get("opCode", ""),
            "source": source(o),
        } for o in result.get("maxHeap", [])],
    }


def record(xprof_python: str) -> None:
    os.makedirs(EXPECTED, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        logdir = os.path.join(tmp, "logdir")
        subprocess.run([sys.executable, __file__, "make-jax-profile", logdir], check=True)
        (profile,) = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
        inputs = {
            "tpu_v6e_inference": TPU_FIXTURE,
            "jax_cpu_mlp": os.path.join(EXPECTED, "memory_jax_cpu_mlp.hlo.xplane.pb"),
            "synthetic": os.path.join(EXPECTED, "memory_synthetic.hlo.xplane.pb"),
        }
        with open(inputs["jax_cpu_mlp"], "wb") as f:
            f.write(metadata_xspace(hlo_protos(profile)))
        with open(inputs["synthetic"], "wb") as f:
            f.write(metadata_xspace(synthetic_modules()))
        for name, path in inputs.items():
            out = os.path.join(EXPECTED, f"memory_{name}.json")
            subprocess.run([xprof_python, __file__, "xprof", path, out], check=True)
            print("wrote", out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("make-jax-profile").add_argument("logdir")
    xprof = sub.add_parser("xprof")
    xprof.add_argument("xplane")
    xprof.add_argument("out")
    sub.add_parser("record").add_argument("--xprof-python", required=True)
    args = parser.parse_args()
    if args.command == "make-jax-profile":
        print(make_jax_profile(args.logdir))
    elif args.command == "xprof":
        result = run_xprof(args.xplane)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
    else:
        record(args.xprof_python)


if __name__ == "__main__":
    main()
