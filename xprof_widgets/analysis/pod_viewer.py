"""Pod viewer (XProf's pod_viewer, deprecated there): each step of every core and host, split into
the parts XProf names, its bottleneck, and the stragglers of each step.

A host's part (analysis/hosts.py) has one row per step and unit, a unit being a device core
(TPU core, GPU), or on a CPU-only run the host's threads, over the step's period from the Input
Pipeline (`input_pipeline_part`). Each instant of the period goes to the first of these that
covers it, in this order:

1. compute, 2. collectives, 3. device to device, 4. input: the Input Pipeline's parts of the unit
   (`unit_step_runs`: compute, device-to-device, host-to-device, input), its device-to-device
   ops split into collectives (all-reduce, all-gather, reduce-scatter, all-to-all,
   collective-permute, NCCL) and the rest, host-to-device and input together as XProf's "Input";
   so compute, the two device-to-device parts together and input equal the Input Pipeline's;
5. output: the unit's outfeed and device-to-host ops;
6. compile: XLA or TensorFlow compilation on the unit's host (events named `...compile...`);
7. host compute: under host-marked steps, the host's work on the thread that runs the steps,
   inside the step markers (the framework's dispatch, Python; TensorFlow's ops run from it);
   devices with their own step markers (TPU `Steps` lines) are measured on the device alone, as
   XProf measures TPU steps and the Input Pipeline does;
8. other: none of these (idle, waits).

The bottleneck of a row is its largest part. A step's time on a host is its slowest unit's. A
straggler is a unit (or host) whose step time is more than STRAGGLER_RATIO times the median of
that step over all units (or hosts): in synchronous training every unit waits for the slowest,
so 10% above the median is the time the others lose. With several hosts the steps are those all
hosts ran, aligned as the Input Pipeline aligns them (step_intersection.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._native.intervals import covered_before
from ..profile.model import PS_PER_US, Profile
from .hosts import host_parts
from .input_pipeline import (
    DEFAULT_INPUT_PATTERN,
    analyze_input_pipeline,
    device_step_levels,
    host_step_work,
    input_pipeline_part,
    unit_step_runs,
)
from .step_intersection import common_steps
from .steps import event_run, track_events

PARTS = ("compute_us", "collectives_us", "device_to_device_us", "input_us", "output_us",
         "compile_us", "host_compute_us", "other_us")
"""The parts of a step, in the order they claim time."""
XPROF_NAMES = {"compute_us": "Device compute", "collectives_us": "Device collective communication",
               "device_to_device_us": "Device to device", "input_us": "Input",
               "output_us": "Output", "compile_us": "Compilation",
               "host_compute_us": "Host compute", "other_us": "All others"}
"""XProf's name of each part (its bottleneck column)."""
STRAGGLER_RATIO = 1.10
COLUMNS = ["step", "name", "host", "core", "start_us", "duration_us", *PARTS, "bottleneck",
           "step_median_us", "straggler"]
_COLLECTIVE = re.compile(r"(?i)all-?reduce|all-?gather|reduce-?scatter|all-?to-?all|"
                         r"collective-?permute|collective|nccl|rccl")
_OUTPUT = re.compile(r"(?i)^outfeed|\bd(?:to|2)h\b|memcpyd(?:to|2)h|device.?to.?host")
_COMPILE = re.compile(r"(?i)compil")


def pod_viewer_part(profile: Profile, input_pattern: str = DEFAULT_INPUT_PATTERN
                    ) -> pd.DataFrame:
    """One host's rows (see the module doc), in that host's frame: step, name, device (the
    unit), start_ps, duration_ps, before_step_ps, and each part in ps."""
    part = input_pipeline_part(profile, input_pattern)
    units = part.unit_steps
    columns = ["step", "name", "device", "start_ps", "duration_ps", "before_step_ps", *PARTS]
    if not len(units):
        return pd.DataFrame(columns=columns)
    names = profile.display_names
    meta = profile.metadata
    categories = np.array([str(s.get("hlo_category", "")) for s in meta["stats"].tolist()],
                          dtype=object)
    labels = categories + " " + names.astype(str)
    collective = np.fromiter((bool(_COLLECTIVE.search(t)) for t in labels.tolist()), bool,
                             len(labels))
    output = np.fromiter((bool(_OUTPUT.search(t)) for t in labels.tolist()), bool, len(labels))
    compiling = np.fromiter((bool(_COMPILE.search(n)) for n in names.tolist()), bool,
                            len(names))
    host_events = track_events(profile, _host_slice_tracks(profile))
    compile_events = host_events[compiling[profile.meta[host_events]]]
    host_work = host_step_work(profile, part.steps)
    # The Input Pipeline's parts, its device-to-device split and host-to-device joining input.
    step = device_step_levels(profile)
    op_levels = np.select([step == 0, (step == 1) & collective, step == 1, step <= 3, output],
                          [0, 1, 2, 3, 4], 127).astype(np.int8)
    rows = []
    for unit, block in units.groupby("device", sort=False):
        runs = unit_step_runs(profile, unit, op_levels, (3, 3), input_pattern)
        runs += [event_run(profile, compile_events, 5), event_run(profile, host_work, 6)]
        start = block["start_ps"].to_numpy(np.int64)
        end = start + block["duration_ps"].to_numpy(np.int64)
        at_start, at_end = np.split(covered_before(runs, len(PARTS) - 1,
                                                   np.concatenate([start, end])), 2, axis=1)
        out = block[["step", "name", "device", "start_ps", "duration_ps"]].copy()
        out["before_step_ps"] = block["before_step_us"].to_numpy(np.int64)  # ps in unit rows
        previous = np.zeros(start.shape[0], np.int64)
        for column, covered in zip(PARTS[:-1], at_end - at_start, strict=True):
            out[column] = covered - previous
            previous = covered
        out["other_us"] = (end - start) - previous
        rows.append(out)
    return pd.concat(rows, ignore_index=True)[columns]


def _host_slice_tracks(profile: Profile) -> np.ndarray:
    t = profile.tracks
    return t.index[(t["section_kind"] == "host") & (t["kind"] == "slices")].to_numpy(np.int64)


@dataclass(frozen=True)
class PodViewerAnalysis:
    """Every step of every unit (`rows`, COLUMNS), and the tables the view draws from them."""

    rows: pd.DataFrame
    source: str

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(self.rows["host"]))

    def by_host(self) -> pd.DataFrame:
        """One row per step and host: its slowest core's time and bottleneck, the step's median
        over hosts, whether the host straggles."""
        if not len(self.rows):
            return pd.DataFrame(columns=["step", "name", "host", "duration_us", "core",
                                         "bottleneck", "step_median_us", "straggler"])
        r = self.rows
        slowest = r.loc[r.groupby(["step", "host"], sort=True)["duration_us"].idxmax()]
        out = slowest[["step", "name", "host", "duration_us", "core", "bottleneck"]].copy()
        return _flag(out.reset_index(drop=True))

    def host_breakdown(self) -> pd.DataFrame:
        """One row per host (a rank of a PyTorch run): its average step on its slowest core,
        split into the parts, that step's bottleneck, and how many of its steps straggle."""
        columns = ["host", "steps", "duration_us", *PARTS, "bottleneck", "straggling_steps"]
        if not len(self.rows):
            return pd.DataFrame(columns=columns)
        r = self.rows
        slowest = r.loc[r.groupby(["step", "host"], sort=True)["duration_us"].idxmax()]
        hosts = self.by_host()
        out = slowest.groupby("host", sort=False)[["duration_us", *PARTS]].mean()
        out.insert(0, "steps", slowest.groupby("host", sort=False).size())
        out["bottleneck"] = np.array(PARTS, dtype=object)[out[list(PARTS)].to_numpy().argmax(1)]
        out["bottleneck"] = out["bottleneck"].map(XPROF_NAMES)
        out["straggling_steps"] = hosts.groupby("host", sort=False)["straggler"].sum()
        out = out.reindex(self.hosts).reset_index().rename(columns={"index": "host"})
        return out[columns].astype({"steps": np.int64, "straggling_steps": np.int64})

    def steps(self) -> pd.DataFrame:
        """One row per step: its slowest core (host and core), the time and bottleneck there,
        the median over cores, how many cores and hosts straggle."""
        if not len(self.rows):
            return pd.DataFrame(columns=["step", "name", "duration_us", "host", "core",
                                         "bottleneck", "step_median_us", "stragglers",
                                         "straggler_hosts"])
        r = self.rows
        slowest = r.loc[r.groupby("step", sort=True)["duration_us"].idxmax()]
        out = slowest[["step", "name", "duration_us", "host", "core", "bottleneck",
                       "step_median_us"]].reset_index(drop=True)
        out["stragglers"] = r.groupby("step", sort=True)["straggler"].sum().to_numpy(np.int64)
        hosts = self.by_host()
        out["straggler_hosts"] = hosts.groupby("step", sort=True)["straggler"].sum().to_numpy(
            np.int64)
        return out


def analyze_pod_viewer(profile: Profile,
                       input_pattern: str = DEFAULT_INPUT_PATTERN) -> PodViewerAnalysis:
    """Every host's rows combined (see the module doc); computed once per profile."""
    return profile.memo(("pod_viewer", input_pattern), lambda: _analyze(profile, input_pattern))


def pod_viewer_available(profile: Profile) -> bool:
    """Whether the profile has steps to break down (the suite's tab): the Input Pipeline's
    steps, which the Overview computes anyway."""
    return bool(len(analyze_input_pipeline(profile).steps))


def _analyze(profile: Profile, input_pattern: str) -> PodViewerAnalysis:
    parts = host_parts(profile, pod_viewer_part, input_pattern)
    frames = []
    for p in parts:
        rows = p.part.copy()
        rows["start_ps"] = rows["start_ps"].astype(np.int64) + p.shift_ps
        rows["host"] = p.host
        rows["core"] = rows["device"]
        rows["device"] = p.host + " " + rows["device"].astype(str)  # one unit per host
        frames.append(rows)
    frames = [f for f in frames if len(f)]
    if not frames:
        return PodViewerAnalysis(pd.DataFrame(columns=COLUMNS), profile.source)
    rows = common_steps(frames) if len(frames) > 1 else frames[0]
    out = rows[["step", "name", "host", "core"]].copy()
    out["start_us"] = rows["start_ps"].to_numpy(np.float64) / PS_PER_US
    out["duration_us"] = rows["duration_ps"].to_numpy(np.float64) / PS_PER_US
    for column in PARTS:
        out[column] = rows[column].to_numpy(np.float64) / PS_PER_US
    out["before_step_us"] = rows["before_step_ps"].to_numpy(np.float64) / PS_PER_US
    parts_array = out[list(PARTS)].to_numpy()
    out["bottleneck"] = np.array(PARTS, dtype=object)[parts_array.argmax(axis=1)]
    out["bottleneck"] = out["bottleneck"].map(XPROF_NAMES)
    out = out.sort_values(["step", "host", "core"], kind="stable").reset_index(drop=True)
    return PodViewerAnalysis(_flag(out)[COLUMNS + ["before_step_us"]], profile.source)


def _flag(rows: pd.DataFrame) -> pd.DataFrame:
    """The step's median time over the rows of each step, and who is far above it."""
    rows["step_median_us"] = rows.groupby("step")["duration_us"].transform("median")
    rows["straggler"] = rows["duration_us"] > STRAGGLER_RATIO * rows["step_median_us"]
    return rows
