"""A small XSpace of one multislice TPU host, for XProf's megascale_stats (DCN collectives).

Exactly what that tool reads (xprof/convert/xspace_to_dcn_slack_analysis.cc,
xplane_to_dcn_collective_stats.cc):
- `/host:CPU` holds an event named `MegaScale: ...` (how XProf tells a profile has DCN stats);
- `/device:TPU:0` has an `XLA Modules` line and an `XLA Ops` line whose send, recv, send-done and
  recv-done ops are marked by their metadata's `hlo_category` ("host send", "host recv", ...),
  each inside a module execution; the sends' metadata carry `dcn_collective_info` (the replica
  groups: a DcnCollectiveInfoProto);
- `/host:metadata` holds the module's `Hlo Proto`, whose send/recv instructions carry a
  `channel_id` and the frontend attributes `_xla_host_transfer_rendezvous` (the collective's
  name) and `_xla_megascale_transfer_type`; a recv-done's shape sizes the transfer.

Five steps run four DCN collectives that overlap one another (an all-reduce over 4 slices, an
all-gather over 2, a one-to-one transfer, and a reduce-scatter whose send states no replica
groups, so XProf counts no bytes for it) between compute fusions.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .wire import encode_varint, len_delimited, varint_scalar
from .xspace import Plane, Stat, write_xspace

BASE_NS = 4_000_000_000_000_000  # the lines' timestamp_ns: as large as int64 picoseconds allow
PROGRAM_ID = 6_021_734_517
MODULE = "jit_dcn_step"
STEPS = 5
NS = 1000  # ps
F32, BF16, U32, TUPLE, TOKEN = 11, 16, 8, 13, 17


@dataclass(frozen=True)
class Collective:
    rendezvous: str
    transfer_type: str
    channel: int
    element_type: int
    dims: tuple[int, ...]
    slices: int  # replica group size stated on the send (0: none stated)
    attributes_on_recv: bool  # else the recv finds its rendezvous by channel, as XProf allows


COLLECTIVES = (
    Collective("all-reduce.1_dcn", "ALL_REDUCE", 1, F32, (1024, 256), 4, True),
    Collective("all-gather.2_dcn", "ALL_GATHER", 2, BF16, (512, 512), 2, False),
    Collective("send-recv.3_dcn", "ONE_TO_ONE", 3, F32, (256, 256), 1, True),
    Collective("reduce-scatter.4_dcn", "REDUCE_SCATTER", 4, BF16, (2048, 128), 0, False),
)


# ---- the HLO module, written field by field (xla/service/hlo.proto) --------------------------
def _packed(field: int, values) -> bytes:
    return len_delimited(field, b"".join(encode_varint(int(v)) for v in values))


def _shape(element_type: int, dims: tuple[int, ...] = (), parts: tuple[bytes, ...] = ()) -> bytes:
    out = varint_scalar(2, element_type)
    if dims:
        out += _packed(3, dims) + len_delimited(5, _packed(1, reversed(range(len(dims)))))
        out += _packed(6, [0] * len(dims))
    return out + b"".join(len_delimited(4, p) for p in parts)


def _instruction(iid: int, name: str, opcode: str, shape: bytes, operands=(), *, channel=0,
                 attributes: dict[str, str] | None = None, extra: bytes = b"") -> bytes:
    out = len_delimited(1, name.encode()) + len_delimited(2, opcode.encode())
    out += len_delimited(3, shape) + extra
    if channel:
        out += varint_scalar(26, channel) + varint_scalar(47, 1)  # is_host_transfer
    out += varint_scalar(35, iid) if iid else b""
    out += _packed(36, operands) if operands else b""
    entries = b"".join(len_delimited(1, len_delimited(1, k.encode()) + len_delimited(2, v.encode()))
                       for k, v in (attributes or {}).items())
    return out + len_delimited(68, entries)


def hlo_proto() -> bytes:
    """The `xla.HloProto` of the step: parameters, then each collective's send/recv pair."""
    data = [_shape(c.element_type, c.dims) for c in COLLECTIVES]
    token, u32 = _shape(TOKEN), _shape(U32)
    instructions = [_instruction(i + 1, f"p{i}", "parameter", s, extra=varint_scalar(9, i))
                     for i, s in enumerate(data)]
    tok = len(data) + 1
    instructions.append(_instruction(tok, "tok", "after-all", token))
    iid = tok
    root = 0
    for param, (c, shape) in enumerate(zip(COLLECTIVES, data, strict=True), start=1):
        attrs = {"_xla_host_transfer_rendezvous": c.rendezvous,
                 "_xla_megascale_transfer_type": c.transfer_type}
        k = c.channel
        iid += 1
        send = iid
        pair = _shape(TUPLE, parts=(shape, u32, token))
        instructions.append(_instruction(send, f"send.{k}", "send", pair, [param, tok],
                                         channel=k, attributes=attrs))
        instructions.append(_instruction(iid + 1, f"recv.{k}", "recv", pair, [tok], channel=k,
                                         attributes=attrs if c.attributes_on_recv else None))
        instructions.append(_instruction(iid + 2, f"send-done.{k}", "send-done", token, [send],
                                         channel=k))
        instructions.append(_instruction(iid + 3, f"recv-done.{k}", "recv-done",
                                         _shape(TUPLE, parts=(shape, token)), [iid + 1],
                                         channel=k))
        iid += 3
        root = iid
    iid += 1
    last = data[-1]
    instructions.append(_instruction(iid, "out", "get-tuple-element", last, [root],
                                     extra=varint_scalar(13, 0)))
    program = b"".join(len_delimited(1, s) for s in data) + len_delimited(2, last)
    program += b"".join(len_delimited(3, f"p{i}".encode()) for i in range(len(data)))
    computation = len_delimited(1, b"main") + b"".join(len_delimited(2, i) for i in instructions)
    computation += len_delimited(4, program) + varint_scalar(6, iid)
    module = len_delimited(1, MODULE.encode()) + len_delimited(2, b"main")
    module += len_delimited(3, computation) + len_delimited(4, program)
    module += varint_scalar(5, PROGRAM_ID)
    return len_delimited(1, module)


def collective_info(c: Collective) -> bytes:
    """The send's `dcn_collective_info` (tensorflow.profiler.DcnCollectiveInfoProto)."""
    if c.slices == 0:
        return b""
    def endpoint(slice_id: int) -> bytes:
        return varint_scalar(1, slice_id) + varint_scalar(2, 0)

    if c.transfer_type == "ONE_TO_ONE":
        return len_delimited(3, len_delimited(1, endpoint(0)) + len_delimited(2, endpoint(1)))
    group = b"".join(len_delimited(1, endpoint(s)) for s in range(c.slices))
    return varint_scalar(1, {"ALL_REDUCE": 5, "ALL_GATHER": 4}.get(c.transfer_type, 0)) + \
        len_delimited(2, group)


# ---- the planes ----------------------------------------------------------------------------
def _device_plane(tmp: Path, rng: np.random.Generator) -> Plane:
    plane = Plane(1, "/device:TPU:0", tmp)
    plane.stats += [plane.stat("device_id", 0), plane.stat("device_type_string", "TPU v6 Lite")]
    module_md = plane.event_id(f"{MODULE}({PROGRAM_ID})",
                               stats=[plane.stat("program_id", PROGRAM_ID, "uint64")])

    def op(name: str, category: str, info: bytes = b"") -> int:
        """An op's metadata as TPU profiles write it: the HLO text, the instruction's name as
        the display name (which XProf looks the instruction up by)."""
        stats = [plane.stat("hlo_category", category),
                 plane.stat("program_id", PROGRAM_ID, "uint64")]
        if info:
            stats.append(plane.stat("dcn_collective_info", info))
        opcode = name.split(".")[0]
        return plane.event_id(f"%{name} = {opcode}(...)", name, stats=stats)

    # the step's op order: each collective's send and recv start early, compute runs, and the
    # collectives complete in turn, overlapping one another
    order = []
    for c in COLLECTIVES:
        k = c.channel
        order += [(op(f"send.{k}", "host send", collective_info(c)), 3),
                  (op(f"recv.{k}", "host recv"), 2)]
    fusions = [op(f"fusion.{i}", "convolution fusion") for i in range(3)]
    order += [(fusions[0], 400), (fusions[1], 250)]
    for c in COLLECTIVES:
        k = c.channel
        order += [(op(f"send-done.{k}", "host send-done"), 20), (fusions[2], 120),
                  (op(f"recv-done.{k}", "host recv-done"), 60)]
    modules = plane.line(1, "XLA Modules", BASE_NS)
    ops = plane.line(2, "XLA Ops", BASE_NS)
    step_ps = 10_000_000 * NS
    md, start, dur = [], [], []
    module_start, module_dur = [], []
    for s in range(STEPS):
        t = (s + 1) * step_ps + 5_000 * NS
        module_start.append(t)
        for meta, base_us in order:
            t += int(rng.uniform(2, 40) * 1000) * NS  # a gap of 2-40 us, whole ns
            length = int(base_us * 1000 * rng.uniform(0.7, 1.6)) * NS
            md.append(meta)
            start.append(t)
            dur.append(length)
            t += length
        module_dur.append(t + 3_000 * NS - module_start[-1])
    abs0 = BASE_NS * 1000
    modules.add(np.full(STEPS, module_md), abs0 + np.array(module_start), np.array(module_dur))
    ops.add(np.array(md), abs0 + np.array(start), np.array(dur))
    return plane


def _host_plane(tmp: Path) -> Plane:
    plane = Plane(2, "/host:CPU", tmp)
    md = plane.event_id("MegaScale: Communication Transport Send")
    line = plane.line(11, "megascale_transport", BASE_NS)
    at = BASE_NS * 1000 + np.arange(1, STEPS + 1) * 10_000_000 * NS
    line.add(np.full(STEPS, md), at, np.full(STEPS, 50_000 * NS), [
        Stat(plane.stat_id("step"), np.arange(STEPS))])
    return plane


def _metadata_plane(tmp: Path) -> Plane:
    plane = Plane(3, "/host:metadata", tmp)
    plane.event_id(MODULE, stats=[plane.stat("Hlo Proto", hlo_proto(), "bytes"),
                                  plane.stat("program_id", PROGRAM_ID, "uint64")],
                   metadata_id=PROGRAM_ID)
    return plane


def write_megascale_profile(path: str | Path, seed: int = 0) -> Path:
    """Writes the multislice host to `path` (an .xplane.pb) and returns it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        planes = [_device_plane(Path(tmp), rng), _host_plane(Path(tmp)), _metadata_plane(Path(tmp))]
        write_xspace(path, planes, [path.name.split(".")[0]])
    return path
