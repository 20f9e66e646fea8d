"""Brute-force recounts of a profile file and our decode of it, for the invariant tests: upb's
parse of an XSpace and an exact-decimal `json` parse of a Chrome trace, written out plainly."""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter, defaultdict
from decimal import Decimal

import numpy as np

import xprof_widgets as xw
from xprof_widgets.profile.ordering import INTERNAL_EVENTS
from xprof_widgets.profile.schema import XSpace


# ---- brute force -------------------------------------------------------------------------------
def recount_xspace(data: bytes) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(plane, line) -> every event the file holds and XProf draws, as (absolute start ps,
    duration ps), from upb."""
    rows: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for plane in XSpace.FromString(data).planes:
        if plane.name == "/host:metadata":
            continue
        for line in plane.lines:
            name = line.display_name or line.name
            for event in line.events:
                event_name = plane.event_metadata[event.metadata_id].name
                if event_name not in INTERNAL_EVENTS:
                    at = line.timestamp_ns * 1000 + event.offset_ps
                    rows[(plane.name, name)].append((at, event.duration_ps))
    return rows


def same_id(value: object) -> object:
    """A pid or tid as JavaScript viewers key it: "25738" and 25738 are one thread."""
    return int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else value


def unnamed(kind: str, key: object) -> str:
    """A process or thread no metadata names: by number, else by its own text, else Global."""
    if isinstance(key, str):
        return key.strip() or "Global"
    return f"{kind} {key}"


def recount_chrome(data: bytes) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(process, thread) -> every complete event and instant as (start ps, duration ps); starts
    on the epoch clock where Kineto's `baseTimeNanoseconds` says where its `ts` count from."""
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data,
                     parse_float=Decimal)  # epoch microseconds: exact, not float64's 0.24 ns
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    base_ps = doc.get("baseTimeNanoseconds", 0) * 1000 if isinstance(doc, dict) else 0
    process, label, thread = {}, {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            process[same_id(e["pid"])] = e["args"]["name"].strip()
        elif e.get("ph") == "M" and e.get("name") == "process_labels":
            label[same_id(e["pid"])] = e["args"]["labels"].strip()
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            thread[(same_id(e["pid"]), same_id(e["tid"]))] = e["args"]["name"].strip()
    # Kineto names the host process and every GPU alike: those names get the pid, and the
    # process its label ("GPU 0"), unless the label says no more than "CPU" or the name
    used = {same_id(e["pid"]) for e in events if e.get("ph") in ("X", "i", "I")}
    shared = Counter(process[pid] for pid in used if pid in process)
    for pid in used & set(process):
        name, extra = process[pid], label.get(pid, "")
        extra = "" if extra in ("CPU", name) else extra
        if shared[name] > 1 or extra:
            process[pid] = f"{name} ({pid}) {extra}".rstrip()
    rows: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e.get("ph") in ("X", "i", "I"):  # complete events and instants
            pid, tid = same_id(e["pid"]), same_id(e["tid"])
            key = (process.get(pid) or unnamed("Process", pid),
                   thread.get((pid, tid)) or unnamed("Thread", tid))
            duration = Decimal(e.get("dur", 0)) if e["ph"] == "X" else Decimal(0)
            rows[key].append((base_ps + round(Decimal(e["ts"]) * 10**6), round(duration * 10**6)))
    return rows


def brute_depths(events: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(start, duration, depth) by the nesting rule, written out plainly: an event lies under the
    latest-starting earlier event that contains it (instants contain nothing), one level deeper
    when the last event at that depth would contain it."""
    ordered = sorted(events, key=lambda e: (e[0], -e[1]))
    out, containers, last_end = [], [], {}
    for start, duration in ordered:
        end = start + duration
        containers = [c for c in containers if c[0] >= end]
        depth = containers[-1][1] + 1 if containers else 0
        while last_end.get(depth, -1) > end:
            depth += 1
        last_end[depth] = end
        out.append((start, duration, depth))
        if duration > 0:
            containers.append((end, depth))
    return sorted(out)


def our_rows(profile: xw.Profile) -> dict[tuple[str, str], list[tuple[int, int, int, bool]]]:
    """(section, track) -> every drawn event as (start ps, duration ps, depth, derived)."""
    drawn = profile.tracks[profile.tracks["kind"] == "slices"]
    rows = {}
    for _, row in drawn.iterrows():
        idx = np.arange(row["first_event"], row["end_event"])
        rows[(row["section"], row["name"])] = sorted(zip(
            profile.start_ps[idx].tolist(), profile.duration_ps[idx].tolist(),
            profile.depth[idx].tolist(), profile.derived[idx].tolist(), strict=True))
    return rows


# ---- shuffled copies ------------------------------------------------------------------------------
def shuffled_xspace(data: bytes, rng: random.Random) -> bytes:
    space = XSpace.FromString(data)
    planes = list(space.planes)
    rng.shuffle(planes)
    out = XSpace()
    out.CopyFrom(space)
    del out.planes[:]
    for plane in planes:
        copy = out.planes.add()
        copy.CopyFrom(plane)
        lines = list(plane.lines)
        rng.shuffle(lines)
        del copy.lines[:]
        for line in lines:
            copy.lines.add().CopyFrom(line)
    return out.SerializeToString()


def shuffled_chrome(data: bytes, rng: random.Random) -> bytes:
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    rng.shuffle(events)
    return json.dumps(doc).encode()
