"""Where a profile's training steps are, from the markers frameworks write.

Looked for in this order; the first kind found is used:

1. a `Steps` line on device planes (TPU runtimes write one): one event per step and device,
   named by its step number, with a `group_id` stat;
2. host step roots: events with stat `_r` = 1, as `jax.profiler.StepTraceAnnotation("train",
   step_num=i)` and `tf.profiler.experimental.Trace(..., _r=1)` write (step number from
   `step_num`, else `iter_num`, else a number ending the name, else the order); Chrome traces
   drop `_r`, so there events with a `step_num` stat, or PyTorch's `ProfilerStep#N`, count;
3. TensorFlow step groups: events with a `group_id` stat; a step spans its group's events.

Host roots named like XProf's explicit step markers (`train...`, `test...`, `TraceContext`) win
over other roots, and runtime events that TensorFlow marks as roots (`FunctionRun` of every
tf.function, tf.data's included; `EagerExecute`...) are never steps.

A host-marked step's period (`period_start_ps` to `end_ps`) runs from the end of the step before
it on the same thread to its own end: the wait for its batch (a loader's `__next__` between the
annotations), then its work. Device steps and the first host step start where they start.

The result keeps one row per step and device (or host), so multi-chip and multi-host profiles
keep every chip's own step time; `Steps.table` folds them the way XProf does: a step lasts as
long as its slowest chip.

Which found steps are counted is XProf's rule (its step_events_to_steps_db.cc), in two parts
applied to host-marked XSpace and JAX runs:

- `ill_formed`: a step without compute inside its marker is not well formed and is left out
  (device compute where the run has devices, else host compute); every tool that measures
  steps (step_breakdown.py: the Pod Viewer, the Input Pipeline, the Overview) drops it;
- `edge_steps`: when more than EDGE_STEPS_KEPT well-formed steps remain, the first and the last
  are left out too (the capture may cut them). XProf does this for its Input Pipeline and its
  Overview (input_pipeline.py), not for its Pod Viewer.

A device `Steps` line (TPU) is already cut to whole steps and kept as it is, and PyTorch traces
keep PyTorch's rule: every `ProfilerStep#N`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from ..profile.model import Profile

STEPS_LINE = "Steps"
SPARSE_CORE = "SparseCore"
LOOKED_FOR = (
    "a `Steps` line on a device plane (TPU runtimes write one)",
    ("host step roots: events with stat `_r`=1, as jax.profiler.StepTraceAnnotation and "
     "tf.profiler.experimental.Trace(..., _r=1) write (in Chrome traces, which drop `_r`: "
     "events with a `step_num` stat, or PyTorch's `ProfilerStep#N`)"),
    "TensorFlow step groups: events with a `group_id` stat",
)
SOURCES = ("device Steps line", "host step roots", "TensorFlow group_id")
HOW_TO_MARK = (
    "Mark each training step when you profile, e.g. in JAX:\n"
    "    for i, batch in enumerate(batches):\n"
    "        with jax.profiler.StepTraceAnnotation(\"train\", step_num=i):\n"
    "            state = train_step(state, batch)\n"
    "(TensorFlow: tf.profiler.experimental.Trace(\"train\", step_num=i, _r=1); PyTorch: "
    "prof.step() after each step inside torch.profiler.profile(...).)")
MARKER_COLUMNS = ["step", "name", "section", "host", "track", "start_ps", "end_ps",
                  "period_start_ps"]
_CHUNK = 1 << 20  # events per stat scan, so no n-sized object array is ever made
_PYTORCH_STEP = r"^ProfilerStep#\d+$"
_EXPLICIT_MARKER = re.compile(r"^(?:train|test|TraceContext)[^/]*$")
"""XProf's explicit host step markers (xplane_to_step_events.cc)."""
_RUNTIME_ROOTS = re.compile(r"^(?:FunctionRun|EagerExecute|EagerLocalExecute|EagerKernelExecute)")
"""TensorFlow runtime events that carry `_r` but are not steps (tf.data's functions among them)."""
EDGE_STEPS_KEPT = 5
"""XProf leaves out the first and the last step when more well-formed steps than this remain."""
NO_COMPUTE = "no {work} compute inside its marker: not a well-formed step"
FIRST, LAST = "first", "last"
EDGE = f" of more than {EDGE_STEPS_KEPT} steps: the capture may have cut it"
LEFT_OUT_COLUMNS = ["step", "name", "reason"]
_TRAILING_NUMBER = re.compile(r"(\d+)\s*$")
_STEM = re.compile(r"[\s_\-.:#]*\d+\s*$")


@dataclass(frozen=True)
class Steps:
    """Step markers: `markers` has one row per step and device or host (see MARKER_COLUMNS).

    `source` names the kind of marker used (one of SOURCES), or is "" when none was found;
    `looked_for` lists, in words, every kind of marker that was tried.
    """

    markers: pd.DataFrame
    source: str = ""
    looked_for: tuple[str, ...] = LOOKED_FOR
    step_tracks: tuple[int, ...] = field(default=())

    @property
    def found(self) -> bool:
        return len(self.markers) > 0

    @cached_property
    def table(self) -> pd.DataFrame:
        """One row per step: its name, start and the duration of its slowest device."""
        m = self.markers.assign(duration_ps=self.markers["end_ps"] - self.markers["start_ps"])
        if not len(m):
            return pd.DataFrame({"step": pd.Series(dtype=np.int64), "name": pd.Series(dtype=str),
                                 "start_ps": pd.Series(dtype=np.int64),
                                 "duration_ps": pd.Series(dtype=np.int64),
                                 "section": pd.Series(dtype=str)})
        slowest = m.loc[m.groupby("step", sort=True)["duration_ps"].idxmax()]
        out = slowest[["step", "name", "duration_ps", "section"]].reset_index(drop=True)
        out.insert(2, "start_ps", m.groupby("step", sort=True)["start_ps"].min().to_numpy())
        return out


def find_steps(profile: Profile) -> Steps:
    """The steps of `profile` from the first kind of marker it has (see the module doc)."""
    roots = _host_roots(profile)
    root_tracks = tuple(sorted(set(roots["track"].tolist())))
    for source, found in ((SOURCES[0], lambda: _device_steps(profile)),
                          (SOURCES[1], lambda: roots),
                          (SOURCES[2], lambda: _group_steps(profile))):
        markers = found()
        if len(markers):
            return Steps(_sorted(markers), source, LOOKED_FOR, root_tracks)
    return Steps(_empty_markers(), "", LOOKED_FOR, ())


def ill_formed(steps: pd.DataFrame, work: str) -> pd.DataFrame:
    """The steps without compute inside their marker (LEFT_OUT_COLUMNS), from one row per step
    with `step`, `name` and `has_work`; `work` names that compute ("device" or "host")."""
    idle = steps[~steps["has_work"].to_numpy(bool)].sort_values("step", kind="stable")
    return idle.assign(reason=NO_COMPUTE.format(work=work))[LEFT_OUT_COLUMNS].reset_index(
        drop=True)


def edge_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """The first and the last of more than EDGE_STEPS_KEPT steps (LEFT_OUT_COLUMNS), from one
    row per step with `step` and `name`; none for fewer."""
    steps = steps.sort_values("step", kind="stable")
    if len(steps) <= EDGE_STEPS_KEPT:
        return pd.DataFrame(columns=LEFT_OUT_COLUMNS)
    ends = pd.concat([steps.iloc[:1].assign(reason=FIRST + EDGE),
                      steps.iloc[-1:].assign(reason=LAST + EDGE)], ignore_index=True)
    return ends[LEFT_OUT_COLUMNS]


def stat_hits(profile: Profile, events: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The events among `events` that carry stat `name`, and its values (an object array).

    Scans in chunks so that only the hits are ever held as Python objects.
    """
    events = np.asarray(events, np.int64)
    hits, values = [], []
    for lo in range(0, events.shape[0], _CHUNK):
        chunk = events[lo:lo + _CHUNK]
        column = profile.stat_column(chunk, name)
        present = np.flatnonzero(column != None)
        hits.append(chunk[present])
        values.append(column[present])
    if not hits:
        return np.empty(0, np.int64), np.empty(0, object)
    return np.concatenate(hits), np.concatenate(values)


def track_events(profile: Profile, tracks: np.ndarray | list[int]) -> np.ndarray:
    """Global indices of every event on the given tracks, in track order."""
    tracks = np.asarray(tracks, np.int64)
    if not tracks.shape[0]:
        return np.empty(0, np.int64)
    first = profile.built_tracks["first_event"].to_numpy(np.int64)[tracks]
    end = profile.built_tracks["end_event"].to_numpy(np.int64)[tracks]
    return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(first, end, strict=True)])


EventRun = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(start_ps, duration_ps, level) of events in start order: what `covered_before` merges."""


def track_runs(profile: Profile, tracks: np.ndarray, level_by_meta: np.ndarray) -> list[EventRun]:
    """Each track's events as a run at the level of their metadata row. A track's events are
    stored in start order, so its columns are read in place: one byte per event is made."""
    first = profile.built_tracks["first_event"].to_numpy(np.int64)[tracks]
    end = profile.built_tracks["end_event"].to_numpy(np.int64)[tracks]
    return [(profile.start_ps[a:b], profile.duration_ps[a:b], level_by_meta[profile.meta[a:b]])
            for a, b in zip(first.tolist(), end.tolist(), strict=True)]


def event_run(profile: Profile, events: np.ndarray, level: int) -> EventRun:
    """Some events (from any tracks), sorted by start, all at one level."""
    events = events[np.argsort(profile.start_ps[events], kind="stable")]
    return (profile.start_ps[events], profile.duration_ps[events],
            np.full(events.shape[0], level, np.int8))


def host_tracks(profile: Profile) -> np.ndarray:
    """Tracks of host planes that hold slices (threads), as track ids."""
    t = profile.built_tracks
    return t.index[(t["section_kind"] == "host") & (t["kind"] == "slices")].to_numpy(np.int64)


def device_sections(profile: Profile) -> list[str]:
    """Device planes that run a step (TensorCores, GPUs); SparseCores are helpers, as in XProf."""
    s = profile.sections
    return [n for n in s["name"][s["kind"] == "device"] if SPARSE_CORE not in n]


def _device_steps(profile: Profile) -> pd.DataFrame:
    t = profile.built_tracks
    lines = t.index[(t["name"] == STEPS_LINE) & t["section"].isin(device_sections(profile))]
    events = track_events(profile, lines.to_numpy())
    if not events.shape[0]:
        return _empty_markers()
    names = profile.display_names[profile.meta[events]].astype(str)
    groups = _int_or(profile.stat_column(events, "group_id"), -1)
    numeric = np.array([n.strip().isdigit() for n in names.tolist()], bool)
    order = np.arange(events.shape[0])
    step = np.where(groups >= 0, groups,
                    np.where(numeric, [int(n) if ok else 0 for n, ok in
                                       zip(names.tolist(), numeric.tolist(), strict=True)], order))
    return _markers(profile, events, step, names)


def _host_roots(profile: Profile) -> pd.DataFrame:
    events = track_events(profile, host_tracks(profile))
    if not events.shape[0]:
        return _empty_markers()
    # Python-tracer frames ($file:line function) never carry `_r`: skip them unread.
    python_frames = np.array([n.startswith("$") for n in profile.display_names.tolist()], bool)
    events = events[~python_frames[profile.meta[events]]]
    hits, values = stat_hits(profile, events, "_r")
    roots = hits[_int_or(values, 0) == 1]
    if not roots.shape[0]:  # Chrome traces drop `_r`; JAX's keep `step_num`
        numbered, _ = stat_hits(profile, events, "step_num")
        roots = numbered[~np.isin(numbered, hits)]  # an explicit `_r`=0 is not a root
    if not roots.shape[0]:
        is_step = profile.name_mask(_PYTORCH_STEP)
        roots = events[is_step[profile.meta[events]]]
    names = profile.display_names[profile.meta[roots]].astype(str)
    keep = np.array([not _RUNTIME_ROOTS.match(n) for n in names.tolist()], bool)
    explicit = np.array([bool(_EXPLICIT_MARKER.match(n)) for n in names.tolist()], bool)
    keep &= explicit if explicit.any() else True
    roots, names = roots[keep], names[keep]
    if not roots.shape[0]:
        return _empty_markers()
    stems = np.array([_STEM.sub("", n) or n for n in names.tolist()], dtype=object)
    roots, names = _dominant_stem(profile, roots, names, stems)
    step = _int_or(profile.stat_column(roots, "step_num"), -1)
    missing = step < 0
    if missing.any():
        iters = _int_or(profile.stat_column(roots[missing], "iter_num"), -1)
        trailing = np.array([int(m.group(1)) if (m := _TRAILING_NUMBER.search(n)) else -1
                             for n in names[missing].tolist()], np.int64)
        step[missing] = np.where(iters >= 0, iters, trailing)
    if (step < 0).any():  # no number anywhere: number the steps by time, per host
        step = _ordinal_by_host(profile, roots)
    return _with_waits(_markers(profile, roots, step, names))


def _dominant_stem(profile: Profile, roots: np.ndarray, names: np.ndarray,
                   stems: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keeps the kind of root (`train` vs `eval`, ...) that occurs most, then the longest."""
    if len(set(stems.tolist())) == 1:
        return roots, names
    frame = pd.DataFrame({"stem": stems, "ps": profile.duration_ps[roots]})
    ranked = frame.groupby("stem").agg(n=("ps", "size"), ps=("ps", "sum"))
    best = ranked.sort_values(["n", "ps"], ascending=False).index[0]
    keep = stems == best
    return roots[keep], names[keep]


def _group_steps(profile: Profile) -> pd.DataFrame:
    t = profile.built_tracks
    steppers = (t["section_kind"] == "host") | t["section"].isin(device_sections(profile))
    tracks = t.index[(t["kind"] == "slices") & steppers]
    hits, values = stat_hits(profile, track_events(profile, tracks.to_numpy()), "group_id")
    if not hits.shape[0]:
        return _empty_markers()
    group = _int_or(values, -1)
    keep = group >= 0
    hits, group = hits[keep], group[keep]
    tracks = profile.track_of(hits)
    frame = pd.DataFrame({"step": group, "host": t["host"].to_numpy()[tracks],
                          "section": t["section"].to_numpy()[tracks],
                          "on_host": (t["section_kind"].to_numpy()[tracks] == "host"),
                          "start_ps": profile.start_ps[hits],
                          "end_ps": profile.start_ps[hits] + profile.duration_ps[hits]})
    # A step is everything of its group on one host; it is filed under the host plane.
    frame = frame.sort_values("on_host", ascending=False, kind="stable")
    spans = frame.groupby(["step", "host"], sort=True).agg(
        section=("section", "first"), start_ps=("start_ps", "min"),
        end_ps=("end_ps", "max")).reset_index()
    spans["name"] = spans["step"].astype(str)
    spans["track"] = -1
    spans["period_start_ps"] = spans["start_ps"]
    return spans[MARKER_COLUMNS]


def _markers(profile: Profile, events: np.ndarray, step: np.ndarray,
             names: np.ndarray) -> pd.DataFrame:
    tracks = profile.track_of(events)
    return pd.DataFrame({
        "step": np.asarray(step, np.int64),
        "name": names.astype(object),
        "section": profile.built_tracks["section"].to_numpy()[tracks],
        "host": profile.built_tracks["host"].to_numpy()[tracks],
        "track": tracks.astype(np.int64),
        "start_ps": profile.start_ps[events],
        "end_ps": profile.start_ps[events] + profile.duration_ps[events],
        "period_start_ps": profile.start_ps[events],
    })


def _with_waits(markers: pd.DataFrame) -> pd.DataFrame:
    """Host steps own the wait before them: each period starts where the step before it on the
    same thread ended (never after the step's own start)."""
    markers = markers.sort_values(["track", "start_ps"], kind="stable")
    previous_end = markers.groupby("track")["end_ps"].shift(1)
    start = markers["start_ps"]
    markers["period_start_ps"] = previous_end.where(previous_end < start, start).fillna(
        start).astype(np.int64)
    return markers.sort_index()


def _ordinal_by_host(profile: Profile, events: np.ndarray) -> np.ndarray:
    host = profile.built_tracks["host"].to_numpy()[profile.track_of(events)]
    frame = pd.DataFrame({"host": host, "start": profile.start_ps[events]})
    return frame.groupby("host")["start"].rank(method="first").to_numpy(np.int64) - 1


def _sorted(markers: pd.DataFrame) -> pd.DataFrame:
    return markers.sort_values(["step", "section", "start_ps"], kind="stable").reset_index(drop=True)


def _empty_markers() -> pd.DataFrame:
    return pd.DataFrame({
        "step": pd.Series(dtype=np.int64), "name": pd.Series(dtype=object),
        "section": pd.Series(dtype=object), "host": pd.Series(dtype=object),
        "track": pd.Series(dtype=np.int64), "start_ps": pd.Series(dtype=np.int64),
        "end_ps": pd.Series(dtype=np.int64), "period_start_ps": pd.Series(dtype=np.int64)})


def _int_or(values: np.ndarray, default: int) -> np.ndarray:
    """Integer stats (numbers or digit strings) as int64, `default` where absent or not one."""
    numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(np.float64)
    whole = np.isfinite(numbers) & (numbers == np.round(numbers))
    return np.where(whole, numbers, default).astype(np.int64)
