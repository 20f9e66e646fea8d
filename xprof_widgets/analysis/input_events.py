"""Host input events: which host events are input work, enqueue (host-to-device) or a wait for
input, and the input-op category of each, as XProf's input pipeline names them.

Input operations are tf.data iterators (`Iterator::...`), grain iterators, enqueue and
host-to-device transfers, and user annotations whose names match `input_pattern`. Categories
follow XProf: tf.data readers (`::TFRecord`, `::TextLine`, ...) are a demanded file read, or an
advanced one under `::Prefetch`, `::Interleave` or `::ParallelMap`; other tf.data ops and grain
are preprocessing. User annotations that read or load are a demanded file read on the thread
that runs the steps and an advanced one on any other thread (that is reading ahead); ones that
preprocess, augment, decode, tokenize or batch are preprocessing; the rest is other input time.
The Input Pipeline sums them into its op table; the step breakdown claims their time.

An iterator that runs the model is not input: a Hugging Face pipeline's `__next__` (or a
DataLoader whose collate runs GPU ops) launches the GPU kernels itself. On a PyTorch trace an
input event's launching time is the union of the CPU ops nested in it that launch a GPU kernel
(they hold a runtime or driver call sharing its `correlation` with a kernel) and of such calls
outside any CPU op; copies and memsets do not count, since moving a batch to the GPU is input
work. An input event whose launching time is LAUNCH_SHARE of its span or more is left out
(neither an input op nor input time); in any other input event only the launching time is
cut from its input time (its op-table times are kept).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .._native.intervals import union_intervals as _merge
from ..profile.model import Profile
from .kineto import CPU_OPS, KERNELS, events_of, int_stat
from .kineto.gpu_time import host_correlations
from .steps import Steps, host_tracks, track_events

DEFAULT_INPUT_PATTERN = (
    r"(?i)^_*(?:(?:get|next|make)_?)?(?:input|inputs|data|dataset|datasets|dataloader|data_loader|"
    r"loader|load|loading|batch|batches|prefetch|preprocess|preprocessing|augment|augmentation|"
    r"decode|read|reader|fetch|shuffle|tokenize|tokenization|collate)(?![a-z0-9])"
    r"|dataloader|data_loader|\b__next__$")
"""Names of user code that counts as input work, in any case: a word like `input`, `data`,
`batch`, `load`, `read`, `prefetch` or `preprocess` starting the name (`load_batch`,
`input_pipeline`, `NextBatch`, `_load_batch`), a data loader (PyTorch's
`enumerate(DataLoader)#...__next__`), or an iterator's `__next__` (the loader of a plain
`for batch in loader:`). Python-tracer frames (`$file.py:12 __next__`) are matched by their
function name. Runtime events (`LoadProgram`, `Handle inputs`) do not match."""

ENQUEUE, DEMANDED, ADVANCED, PREPROCESSING, OTHER_INPUT = (
    "Enqueue", "Demanded file read", "Advanced file read", "Preprocessing", "Other input time")
HOST_CATEGORIES = (ENQUEUE, DEMANDED, ADVANCED, PREPROCESSING, OTHER_INPUT)

# Host event kinds (per metadata row).
_NONE, _INPUT, _ENQUEUE, _WAIT = 0, 1, 2, 3
_TFDATA = re.compile(r"^Iterator::")
_GRAIN = re.compile(r"^(?:grain\b|Grain)|DatasetIterator")
_ENQUEUE_NAME = re.compile(
    r"^(?:InfeedEnqueue|TransferToInfeed|TransferToDevice|TransferLiteralToDevice|"
    r"MemcpyHToD|DevicePut|BufferFromPyval|HostToDevice)|:(?:InfeedEnqueue\w*|MemcpyHToD)$")
"""Host-side transfers to the device: TensorFlow's infeed enqueue and `MemcpyHToD` ops, as XProf
counts them, and JAX's and PjRt's transfers. TensorFlow's host ops named `MemcpyH2D` or `_Send*`
only hand a tensor to the GPU stream, whose own copy events are the transfer; counting both
made a TF GPU run look input-bound where XProf measures no input time."""
_WAIT_NAME = re.compile(r"^IteratorGetNext|:IteratorGetNext\w*$")
_FILE_READERS = ("::TFRecord", "::TextLine", "::FixedLengthRecord", "::SSTable", "::RecordIO",
                 "::ArrayRecord")
_READ_AHEAD = ("::MemoryReader", "::MemoryWriter", "::Interleave", "::Prefetch", "::ParallelMap")
_READ_WORDS = {"read", "reader", "load", "loader", "loading", "fetch", "dataloader", "source"}
_PREP_WORDS = {"preprocess", "preprocessing", "augment", "augmentation", "decode", "tokenize",
               "tokenization", "transform", "map", "shuffle", "batch", "batches", "collate"}
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
LAUNCH_SHARE = 0.5
"""An input event whose time launches GPU kernels this share of its span or more is not input
(the module doc)."""


@dataclass(frozen=True)
class HostEvents:
    """A host's input, enqueue and wait events (global indices) with, for each, its input-op
    category ("" for waits) and whether it lies on a thread that runs the steps."""

    events: np.ndarray
    kind: np.ndarray  # _INPUT, _ENQUEUE or _WAIT
    category: np.ndarray
    on_step_thread: np.ndarray
    launch_start: np.ndarray | None = None
    launch_end: np.ndarray | None = None
    """The launching time inside the input events (the module doc): disjoint intervals per
    track, `launch_track` saying whose; None where nothing launches."""
    launch_track: np.ndarray | None = None

    @property
    def is_wait(self) -> np.ndarray:
        """Waits for the next element of a tf.data iterator (`IteratorGetNext`)."""
        return self.kind == _WAIT

    @property
    def is_enqueue(self) -> np.ndarray:
        """Host-to-device transfers (infeed enqueue, copies to the device)."""
        return self.kind == _ENQUEUE


def host_input_events(profile: Profile, steps: Steps, pattern: str) -> HostEvents:
    """The input events of `profile` (one host) for `pattern`; found once per profile."""
    return profile.memo(("input_events", pattern),
                        lambda: _host_input_events(profile, pattern, steps.step_tracks))


def _host_input_events(profile: Profile, pattern: str, step_tracks: tuple[int, ...]) -> HostEvents:
    kind_of_meta, category_of_meta, reads = _host_kinds(profile, pattern)
    events = track_events(profile, host_tracks(profile))
    events = _outside_annotations(profile, events[kind_of_meta[profile.meta[events]] != _NONE])
    meta = profile.meta[events]
    on_step = np.isin(profile.track_of(events), np.asarray(step_tracks, np.int64))
    category = category_of_meta[meta].copy()
    user_reads = reads[meta]
    category[user_reads] = np.where(on_step[user_reads] | (len(step_tracks) == 0), DEMANDED,
                                    ADVANCED)
    keep, launches = _launching(profile, events, kind_of_meta[meta] == _INPUT)
    return HostEvents(events[keep], kind_of_meta[meta][keep], category[keep], on_step[keep],
                      *launches)


def input_pieces(profile: Profile, host: HostEvents, events: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The (start, duration) pieces of these input events' time less their launching time."""
    start = profile.start_ps[events]
    end = start + profile.duration_ps[events]
    if host.launch_start is None or not events.shape[0]:
        return start, end - start
    tracks = profile.track_of(events)
    lo_parts, hi_parts = [start[~np.isin(tracks, host.launch_track)]], \
        [end[~np.isin(tracks, host.launch_track)]]
    for track in np.unique(host.launch_track).tolist():
        mine = tracks == track
        cut = host.launch_track == track
        lo, hi = _subtract(start[mine], end[mine], host.launch_start[cut], host.launch_end[cut])
        lo_parts.append(lo)
        hi_parts.append(hi)
    lo, hi = np.concatenate(lo_parts), np.concatenate(hi_parts)
    keep = hi > lo
    return lo[keep], hi[keep] - lo[keep]


def _subtract(start: np.ndarray, end: np.ndarray, cut_lo: np.ndarray, cut_hi: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Each [start, end) less the sorted disjoint cuts: the pieces between the cuts inside
    it (empty pieces where a cut reaches an edge, dropped by the caller)."""
    first = np.searchsorted(cut_hi, start, side="right")  # the first cut ending after start
    last = np.searchsorted(cut_lo, end, side="left")  # past the last cut starting before end
    n = np.maximum(last - first, 0)
    owner = np.repeat(np.arange(start.shape[0]), n + 1)
    k = np.arange(owner.shape[0]) - np.repeat(np.cumsum(n + 1) - (n + 1), n + 1)
    cut = np.repeat(first, n + 1) + k  # piece k lies before cut first+k (or after the last)
    is_first, is_last = k == 0, k == np.repeat(n, n + 1)
    lo = np.where(is_first, start[owner], cut_hi[np.clip(cut - 1, 0, None)])
    hi = np.where(is_last, end[owner], cut_lo[np.clip(cut, 0, cut_lo.shape[0] - 1)])
    return np.maximum(lo, start[owner]), np.minimum(hi, end[owner])


def _launching(profile: Profile, events: np.ndarray, is_input: np.ndarray
               ) -> tuple[np.ndarray, tuple]:
    """Which input events stay (launching under LAUNCH_SHARE of their span) and the launching
    time inside the kept ones (start, end, track), as the module doc defines it."""
    keep = np.ones(events.shape[0], bool)
    kernels = events_of(profile, KERNELS, "device")
    if not kernels.shape[0] or not is_input.any():
        return keep, (None, None, None)
    has, kernel_corr = int_stat(profile, kernels, "correlation")
    calls, call_corr = host_correlations(profile)
    calls = calls[np.isin(call_corr, kernel_corr[has])]
    inputs = events[is_input]
    call_tracks, input_tracks = profile.track_of(calls), profile.track_of(inputs)
    ops = events_of(profile, CPU_OPS, "host")
    ops = ops[~np.isin(ops, events)]
    op_tracks = profile.track_of(ops)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for track in np.intersect1d(call_tracks, input_tracks).tolist():
        mine = calls[call_tracks == track]
        call_start = np.sort(profile.start_ps[mine])
        here = np.flatnonzero(is_input)[input_tracks == track]
        start = profile.start_ps[events[here]]
        span = profile.duration_ps[events[here]]
        op = ops[op_tracks == track]
        op_start = profile.start_ps[op]
        op_end = op_start + profile.duration_ps[op]
        holds = (np.searchsorted(call_start, op_end) > np.searchsorted(call_start, op_start)) \
            & _inside(start, start + span, op_start, op_end)
        a, b, before = _merge(np.concatenate([op_start[holds], profile.start_ps[mine]]),
                              np.concatenate([op_end[holds], profile.start_ps[mine]
                                              + profile.duration_ps[mine]]))
        launching = _measure(a, b, before, start, start + span)
        keep[here] = launching < LAUNCH_SHARE * np.maximum(span, 1)
        parts.append((a, b, np.full(a.shape[0], track, np.int64)))
    if not parts:
        return keep, (None, None, None)
    return keep, tuple(np.concatenate(column) for column in zip(*parts, strict=True))


def _outside_annotations(profile: Profile, events: np.ndarray) -> np.ndarray:
    """Drops Python-tracer frames that lie inside another input event of their thread: the
    annotation (`load_batch`) names that work, not the frame under it (`_load_batch`)."""
    frame_rows = np.fromiter((n.startswith("$") for n in profile.display_names.tolist()), bool,
                             profile.display_names.shape[0])
    frames = frame_rows[profile.meta[events]]
    if not frames.any() or frames.all():
        return events
    keep = np.ones(events.shape[0], bool)
    tracks = profile.track_of(events)
    start = profile.start_ps[events]
    end = start + profile.duration_ps[events]
    for track in np.unique(tracks[frames]).tolist():
        named = ~frames & (tracks == track)
        if not named.any():
            continue
        union = _merge(start[named], end[named])
        mine = np.flatnonzero(frames & (tracks == track))
        inside = _measure(*union, start[mine], end[mine]) >= end[mine] - start[mine]
        keep[mine[inside]] = False
    return events[keep]


def _host_kinds(profile: Profile, pattern: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per metadata row: host kind, op category, and whether it is a user read (thread-dependent)."""
    md = profile.metadata
    n = len(md)
    kind = np.full(n, _NONE, np.int8)
    category = np.full(n, "", dtype=object)
    reads = np.zeros(n, bool)
    on_host = np.isin(md["section_id"].to_numpy(),
                      profile.sections.index[profile.sections["kind"] == "host"].to_numpy())
    user = re.compile(pattern)
    names = op_names(profile)
    for row in np.flatnonzero(on_host).tolist():
        name = names[row]
        if _WAIT_NAME.search(name):
            kind[row] = _WAIT
        elif _ENQUEUE_NAME.search(name):
            kind[row], category[row] = _ENQUEUE, ENQUEUE
        elif _TFDATA.search(name):
            kind[row], category[row] = _INPUT, _tfdata_category(name)
        elif _GRAIN.search(name):
            kind[row], category[row] = _INPUT, PREPROCESSING
        elif user.search(_callable_name(name)):
            kind[row] = _INPUT
            words = {w.lower() for w in _WORD.findall(_callable_name(name))}
            if words & _READ_WORDS:
                reads[row], category[row] = True, DEMANDED
            elif words & _PREP_WORDS:
                category[row] = PREPROCESSING
            else:
                category[row] = OTHER_INPUT
    return kind, category, reads


def op_names(profile: Profile) -> np.ndarray:
    """Host event names as the input-op table shows them: tf.data iterators by their full path
    (`Iterator::Root::Prefetch::ParallelMapV2`, as XProf lists them and as their category
    depends on), other events by their display name."""
    full = profile.metadata["name"].to_numpy(dtype=object)
    shown = profile.display_names
    return np.where([n.startswith("Iterator::") for n in full.tolist()], full, shown)


def _callable_name(name: str) -> str:
    """What user code an event names: a Python-tracer frame `$file.py:12 fn` is `fn`."""
    return name.rsplit(" ", 1)[-1] if name.startswith("$") else name


def _tfdata_category(name: str) -> str:
    if name.endswith(_FILE_READERS):
        return ADVANCED if any(part in name for part in _READ_AHEAD) else DEMANDED
    return PREPROCESSING



def _inside(start: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether each [lo, hi) lies within the events [start, end) of its track (so a step
    marker around the input events is not nested in them)."""
    order = np.argsort(start, kind="stable")
    reach = np.maximum.accumulate(end[order])
    k = np.searchsorted(start[order], lo, side="right") - 1
    return (k >= 0) & (reach[np.maximum(k, 0)] >= hi)


# ---- intervals ---------------------------------------------------------------------------------
def _measure(a: np.ndarray, b: np.ndarray, before: np.ndarray, start: np.ndarray,
             end: np.ndarray) -> np.ndarray:
    """Length of the union (a, b) inside each [start, end)."""
    return _covered(a, b, before, end) - _covered(a, b, before, start)


def _covered(a: np.ndarray, b: np.ndarray, before: np.ndarray, t: np.ndarray) -> np.ndarray:
    if not a.shape[0]:
        return np.zeros(t.shape[0], np.int64)
    k = np.searchsorted(a, t, side="right") - 1
    inside = np.clip(np.minimum(t, b[np.maximum(k, 0)]) - a[np.maximum(k, 0)], 0, None)
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0)
