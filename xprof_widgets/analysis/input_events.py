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
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .._native.intervals import union_intervals as _merge
from ..profile.model import Profile
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


@dataclass(frozen=True)
class HostEvents:
    """A host's input, enqueue and wait events (global indices) with, for each, its input-op
    category ("" for waits) and whether it lies on a thread that runs the steps."""

    events: np.ndarray
    kind: np.ndarray  # _INPUT, _ENQUEUE or _WAIT
    category: np.ndarray
    on_step_thread: np.ndarray

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
    return HostEvents(events, kind_of_meta[meta], category, on_step)


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
