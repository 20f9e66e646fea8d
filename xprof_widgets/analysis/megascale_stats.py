"""Megascale stats (XProf's megascale_stats): each DCN collective of a multislice TPU run, with
its slack, observed duration, stalls, occurrences, bytes sent over the network and the
bandwidth it needs to hide behind compute.

As XProf computes it (xprof/convert/xspace_to_dcn_slack_analysis.cc, process_megascale_dcn.cc):
a host has DCN stats when its `/host:CPU` plane names an event `MegaScale: ...`. On
`/device:TPU:0` (XProf reads only that core), each `XLA Ops` event whose `hlo_category` holds
"host send" or "host recv" and that runs inside an `XLA Modules` event is looked up, by its
display name, in that module's HLO: the instruction's opcode, `channel_id` and frontend
attributes `_xla_host_transfer_rendezvous` (the collective; a send-done/recv-done finds it by
channel) and `_xla_megascale_transfer_type`. Ops are visited in time order:

- a send opens an occurrence of its collective (stall and overlap start again);
- every DCN op adds its duration to its collective's stall and to every collective's overlap;
- a recv-done closes the occurrence: slack = recv-done start - send start - overlap, observed =
  recv-done end - send start, bytes from the recv-done's buffer, the replica group (the send's
  `dcn_collective_info`) and the transfer type.

Per collective, the occurrences' slack, stall, observed duration and per-op durations are
averaged, all in whole microseconds as XProf stores them (unsigned integers, truncated).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..profile.hlo import HloModule
from ..profile.model import Profile
from ..profile.schema import PRIMITIVE_TYPES
from .hosts import host_parts
from .steps import track_events

COLUMNS = ["host", "rendezvous", "recv_op_name", "send_op_name", "transfer_type",
           "slack_time_ms", "host_stall_ms", "observed_duration_ms", "send_stall_ms",
           "send_done_stall_ms", "recv_stall_ms", "recv_done_stall_ms", "stall_duration_ms",
           "total_stall_ms", "occurrences", "bytes_transmitted", "required_bandwidth_gbps"]
"""XProf's table, units in the names; `host` added (XProf shows one host at a time)."""
_DCN_OPCODES = ("send", "recv", "send-done", "recv-done")
_U64 = 1 << 64
_GBPS_PER_BYTE_PER_US = 8e-9 / 1e-6  # XProf's conversion, as it computes it
_INT_MAX = 2**31 - 1  # XProf's required bandwidth where the slack is 0


@dataclass
class _Occurrence:
    """One collective's open occurrence (XProf's DcnOpState)."""

    start_ns: int = 0
    transfer_type: str = ""
    overlap_ns: int = 0
    stall_ns: int = 0
    send_op: str = ""
    group: int = 0
    durations_ps: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_DCN_OPCODES, 0))


@dataclass
class _Summary:
    """Sums over a collective's occurrences (XProf's DcnSlackSummary, before averaging)."""

    transfer_type: str
    send_op: str = ""
    recv_op: str = ""
    occurrences: int = 0
    slack_us: int = 0
    stall_us: int = 0
    observed_us: int = 0
    bytes: int = 0
    op_us: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_DCN_OPCODES, 0))


def has_dcn_stats(profile: Profile) -> bool:
    """XProf's test: the host plane names an event `MegaScale: ...`."""
    host = np.flatnonzero(profile.sections["name"].to_numpy() == "/host:CPU")
    names = profile.metadata["name"].astype(str)
    return bool((names.str.startswith("MegaScale:") & profile.metadata["section_id"].isin(host))
                .any())


def _warn(profile: Profile, what: str) -> None:
    note = f"{profile.source}: {what}."
    if note not in profile.warnings:
        profile.warnings.append(note)


def _us(ns: int) -> int:
    """XProf's NanoToMicro into an unsigned proto field: a double, truncated."""
    return int(float(ns % _U64) / 1e3)


def _group_size(info: object) -> int:
    """Replica group size from a DcnCollectiveInfoProto: 1 for one-to-one groups, else the
    first endpoint group's endpoints, 0 when none is stated (ValueError if unreadable)."""
    if not isinstance(info, bytes | bytearray) or not info:
        return 0
    fields = _fields(bytes(info))
    if any(number == 3 for number, _ in fields):
        return 1
    groups = [value for number, value in fields if number == 2]
    return sum(1 for number, _ in _fields(groups[0]) if number == 1) if groups else 0


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """(field number, payload) of a message's varint and length-delimited fields."""
    out, at = [], 0

    def varint() -> int:
        nonlocal at
        value, shift = 0, 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    try:
        while at < len(data):
            key = varint()
            if key & 7 == 0:
                out.append((key >> 3, b""))
                varint()
            elif key & 7 == 2:
                size = varint()
                if at + size > len(data):
                    raise IndexError
                out.append((key >> 3, data[at:at + size]))
                at += size
            else:
                raise ValueError(f"wire type {key & 7}")
    except IndexError:
        raise ValueError("truncated") from None
    return out


def _bytes_of(shape) -> int:
    """XLA's byte size of a buffer: an array's elements, a tuple's arrays summed."""
    def array(s) -> int:
        bits = PRIMITIVE_TYPES.get(int(s.element_type), ("", 0))[1]
        return int(np.prod(list(s.dimensions), dtype=np.int64)) * max(bits // 8, 1) if bits else 0
    if int(shape.element_type) == 13:
        return sum(array(s) for s in shape.tuple_shapes)
    return array(shape)


def _transmitted(size: int, group: int, kind: str) -> int:
    """Bytes a collective sends over DCN, from its recv buffer (XProf's formulas)."""
    if group == 0:
        return 0
    per = {"ONE_TO_ONE": lambda: group * size,
           "ALL_GATHER": lambda: (group - 1) * size / group,
           "ALL_REDUCE": lambda: 2 * ((group - 1) / group) * size,
           "ALL_TO_ALL": lambda: ((group - 1) / group) * size,
           "REDUCE_SCATTER": lambda: size * (group - 1)}.get(kind)
    return int(per()) if per else 0


class _Instructions:
    """The DCN instructions of the profile's modules, looked up by module label and name."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.modules: dict[str, HloModule | None] = {}

    def get(self, label: str, name: str):
        if label not in self.modules:
            try:
                self.modules[label] = HloModule(self.profile.hlo_proto_bytes(label), where=label)
            except ProfileError as exc:  # as XProf: its ops are passed over; we say so
                _warn(self.profile, f"megascale stats: the DCN ops of {label} are left out ({exc})")
                self.modules[label] = None
        module = self.modules[label]
        if module is None:
            return None
        try:
            return module.instruction(name)
        except ProfileError:
            return None


def _dcn_ops(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """The DCN op events on /device:TPU:0 inside a module (time order), and each one's module."""
    sections = np.flatnonzero(profile.sections["name"].to_numpy() == "/device:TPU:0")
    tracks = profile.built_tracks
    own = tracks[tracks["section_id"].isin(sections) & (tracks["kind"] != "hidden")]
    ops = track_events(profile, own.index[own["name"] == "XLA Ops"].to_numpy())
    modules = track_events(profile, own.index[own["name"] == "XLA Modules"].to_numpy())
    if not ops.shape[0] or not modules.shape[0]:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    stats = profile.metadata["stats"].to_numpy()
    rows, where = np.unique(profile.meta[ops], return_inverse=True)
    category = np.array([str(stats[r].get("hlo_category", "")) for r in rows.tolist()], object)
    dcn = np.array([("host send" in c) or ("host recv" in c) for c in category], bool)
    ops = ops[dcn[where.reshape(-1)]]
    ops = ops[np.argsort(profile.start_ps[ops], kind="stable")]
    modules = modules[np.argsort(profile.start_ps[modules], kind="stable")]
    m_start = profile.start_ps[modules]
    m_end = m_start + profile.duration_ps[modules]
    at = np.searchsorted(m_start, profile.start_ps[ops], side="right") - 1
    inside = (at >= 0) & (profile.start_ps[ops] + profile.duration_ps[ops]
                          <= m_end[np.maximum(at, 0)])
    return ops[inside], modules[at[inside]]


def megascale_part(profile: Profile) -> pd.DataFrame:
    """One host's collectives (COLUMNS), in the order they first completed."""
    if not has_dcn_stats(profile):
        return pd.DataFrame(columns=COLUMNS)
    ops, modules = _dcn_ops(profile)
    names = profile.display_names
    instructions = _Instructions(profile)
    meta_stats = profile.metadata["stats"].to_numpy()
    channels: dict[int, str] = {}
    groups: dict[str, int] = {}
    open_: dict[str, _Occurrence] = defaultdict(_Occurrence)
    summaries: dict[str, _Summary] = {}
    origin_ps = int(profile.origin_ps)
    for op, module in zip(ops.tolist(), modules.tolist(), strict=True):
        name = str(names[profile.meta[op]])
        instr = instructions.get(str(names[profile.meta[module]]), name)
        if instr is None:
            continue
        attributes = dict(instr.frontend_attributes.map)
        rendezvous = attributes.get("_xla_host_transfer_rendezvous")
        if rendezvous is not None:
            channels[int(instr.channel_id)] = rendezvous
        elif int(instr.channel_id) in channels:
            rendezvous = channels[int(instr.channel_id)]
        else:
            continue  # its send/recv was not seen
        start_ps = origin_ps + int(profile.start_ps[op])
        duration_ps = int(profile.duration_ps[op])
        start_ns, duration_ns = start_ps // 1000, duration_ps // 1000
        state = open_[rendezvous]
        state.stall_ns += duration_ns
        opcode = str(instr.opcode)
        if opcode == "send":
            if rendezvous not in groups:
                try:
                    groups[rendezvous] = _group_size(
                        meta_stats[profile.meta[op]].get("dcn_collective_info"))
                except ValueError as exc:  # as XProf: no group, so no bytes; we say so
                    _warn(profile, f"megascale stats: {name}'s dcn_collective_info is "
                                   f"unreadable ({exc}); {rendezvous} counts no bytes")
                    groups[rendezvous] = 0
            state.start_ns, state.overlap_ns, state.stall_ns = start_ns, 0, duration_ns
            state.transfer_type = attributes.get("_xla_megascale_transfer_type", "")
            state.send_op, state.group = name, groups[rendezvous]
        if opcode in _DCN_OPCODES:
            state.durations_ps[opcode] = duration_ps
        if opcode == "recv-done" and state.start_ns != 0:
            _close(summaries, rendezvous, state, name, start_ns,
                   (start_ps + duration_ps) // 1000, _bytes_of(instr.shape))
        for other in open_.values():  # every collective seen overlaps this op
            other.overlap_ns += duration_ns
    rows = [_row(profile, rendezvous, s) for rendezvous, s in summaries.items()]
    return pd.DataFrame(rows, columns=COLUMNS)


def _close(summaries: dict[str, _Summary], rendezvous: str, state: _Occurrence, recv_op: str,
           start_ns: int, end_ns: int, size: int) -> None:
    """A recv-done: one occurrence into its collective's sums."""
    s = summaries.setdefault(rendezvous, _Summary(state.transfer_type))
    s.transfer_type, s.send_op, s.recv_op = state.transfer_type, state.send_op, recv_op
    s.occurrences += 1
    s.slack_us += _us(start_ns - state.start_ns - state.overlap_ns)
    s.stall_us += _us(state.stall_ns)
    s.observed_us = (s.observed_us + _us(end_ns) - _us(state.start_ns)) % _U64
    s.bytes = _transmitted(size, state.group, state.transfer_type)
    for opcode in _DCN_OPCODES:  # each a double added to the sum, stored truncated
        s.op_us[opcode] = int(s.op_us[opcode] + state.durations_ps[opcode] / 1e6)


def _row(profile: Profile, rendezvous: str, s: _Summary) -> dict:
    n = s.occurrences

    def mean(total: int) -> int:
        return int(total / n)

    slack, stall = mean(s.slack_us), mean(s.stall_us)
    return {"host": profile.hosts[0], "rendezvous": rendezvous, "recv_op_name": s.recv_op,
            "send_op_name": s.send_op, "transfer_type": s.transfer_type,
            "slack_time_ms": slack / 1e3, "host_stall_ms": np.nan,
            "observed_duration_ms": mean(s.observed_us) / 1e3,
            "send_stall_ms": mean(s.op_us["send"]) / 1e3,
            "send_done_stall_ms": mean(s.op_us["send-done"]) / 1e3,
            "recv_stall_ms": mean(s.op_us["recv"]) / 1e3,
            "recv_done_stall_ms": mean(s.op_us["recv-done"]) / 1e3,
            "stall_duration_ms": stall / 1e3, "total_stall_ms": (stall * n) / 1e3,
            "occurrences": n, "bytes_transmitted": s.bytes,
            "required_bandwidth_gbps": (s.bytes / slack) * _GBPS_PER_BYTE_PER_US if slack
            else float(_INT_MAX)}


def analyze_megascale(profile: Profile) -> pd.DataFrame:
    """Every host's collectives (COLUMNS); computed once per profile."""
    def build() -> pd.DataFrame:
        parts = [p.part for p in host_parts(profile, megascale_part) if len(p.part)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    return profile.memo(("megascale_stats",), build)


def megascale_stats_available(profile: Profile) -> bool:
    """Whether a host has DCN collectives to show."""
    return bool(len(analyze_megascale(profile)))
