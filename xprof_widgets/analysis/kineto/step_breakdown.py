"""A PyTorch trace's step time the way PyTorch's TensorBoard plugin (torch-tb-profiler 0.4)
splits it on its Overview page, and the plugin's three GPU figures.

Step time. Each instant of a step goes to the first of these that covers it: Kernel (GPU
kernels), Memcpy, Memset, Communication (collectives: see below), Runtime (CUDA runtime and
driver calls), DataLoader (`enumerate(DataLoader)#...__next__`, `enumerate(DataPipe)#...`),
CPU Exec (PyTorch's CPU ops); what none covers is Other. So a step's parts add up to its
length exactly, and a kernel running while the host launches it is Kernel, not Runtime.

Steps are the host's `ProfilerStep#N` annotations; a trace without one is one step from its
first CPU op to its last. When the steps launch GPU work, each step is stretched to the GPU:
it starts where the previous one ended (the first: after the last GPU work launched before
any step, if that ended inside it) and ends when the last GPU work launched by a runtime call
inside it ends, if later than the host's end. Trailing steps whose GPU work the profiler
missed are dropped as the plugin drops them: after the last step that launched any, and that
one too when it launched under 80% of what the step before it did.

GPU figures, per GPU (a kernel's `device` arg), over the span from the first step's start to
the last one's end: utilization is the time any kernel runs over the span; estimated SM
efficiency weighs each instant by the `blocks per SM` of the kernels running then (summed,
at most 1) over the span; estimated achieved occupancy is the kernels' `est. achieved
occupancy %` averaged over their time inside the span. The last two are None where no
kernel carries the arg (Kineto writes them for CUDA only).

Where we differ from the plugin, and why (docs/pytorch.md, asserted in
tests/differential/test_torch_plugin_overview.py): the plugin 0.4.3 knows Kineto's category
names of 2021 only, so on current traces it sees no runtime calls (`cuda_runtime`,
`cuda_driver`), no steps or DataLoader spans recorded as `user_annotation`, and it counts
the GPU copy of each `ProfilerStep#N` (`gpu_user_annotation`) as a second step; we read
today's names. Communication kernels are also those of kernel_families.COMMUNICATION_FAMILIES
(DeepEP, NVSHMEM, ...), where the plugin finds only kernels launched under a host op named
`nccl:<op>` or `gloo:<op>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...profile.model import PS_PER_US, Profile
from ..hosts import host_parts
from ..kernel_families import is_communication
from . import KERNELS, int_stat, meta_categories

PARTS = (("kernel_us", "Kernel"), ("memcpy_us", "Memcpy"), ("memset_us", "Memset"),
         ("communication_us", "Communication"), ("runtime_us", "Runtime"),
         ("dataloader_us", "DataLoader"), ("cpu_exec_us", "CPU Exec"), ("other_us", "Other"))
"""Columns in the order an instant is claimed, with the plugin's names for them."""
PART_COLUMNS = [column for column, _ in PARTS]
STEP_COLUMNS = ["host", "step", "start_us", "duration_us", *PART_COLUMNS]
GPU_COLUMNS = ["host", "device", "gpu_utilization", "est_sm_efficiency",
               "est_achieved_occupancy_pct"]

_MEMCPY = ("gpu_memcpy", "Memcpy")
_MEMSET = ("gpu_memset", "Memset")
_RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime")
_CPU = ("cpu_op", "Operator", "python")
_ANNOTATION = ("user_annotation",)
_DEVICE_WORK = (*KERNELS, *_MEMCPY, *_MEMSET)
_COLLECTIVES = frozenset(f"{lib}:{op}" for lib in ("nccl", "gloo")
                         for op in ("broadcast", "reduce", "all_reduce", "all_gather",
                                    "reduce_scatter"))
"""The host ops the plugin reads as communication (its NcclOpNameSet and GlooOpNameSet)."""
_STEP = re.compile(r"^ProfilerStep#(\d+)")
_DATALOADER = re.compile(r"^enumerate\(DataLoader\)#.*\.__next__$|^enumerate\(DataPipe\)#")
_TAIL_KEEP = 0.8
_KERNEL, _MEMCPY_ROLE, _MEMSET_ROLE, _COMM, _RUNTIME_ROLE, _LOADER, _CPU_ROLE, _OTHER = range(8)


@dataclass(frozen=True)
class TorchStepBreakdown:
    """The result of `torch_step_breakdown`: plain DataFrames, one row per step and per GPU."""

    steps: pd.DataFrame
    """STEP_COLUMNS: each step's time in microseconds, split into the plugin's parts."""
    gpu: pd.DataFrame
    """GPU_COLUMNS: one row per GPU that ran kernels (utilization and SM efficiency as
    fractions, occupancy in percent as the plugin writes it); empty for a CPU-only trace."""

    def average(self) -> pd.DataFrame:
        """Per host, the mean step: its duration and each part in microseconds, as the
        plugin's 'Average Step Time'."""
        columns = ["duration_us", *PART_COLUMNS]
        return self.steps.groupby("host", sort=False)[columns].mean().reset_index()

    def to_dataframe(self) -> pd.DataFrame:
        """The steps, then one `average` row per host (step "average")."""
        average = self.average().assign(step="average", start_us=np.nan)
        return pd.concat([self.steps, average[STEP_COLUMNS]], ignore_index=True)

    @property
    def has_gpu(self) -> bool:
        """Whether the steps hold GPU work or runtime calls (the plugin then shows the GPU
        parts; it looks at the whole trace, we at the steps)."""
        gpu_parts = ["kernel_us", "memcpy_us", "memset_us", "runtime_us"]
        return bool(len(self.gpu)) or bool(self.steps[gpu_parts].to_numpy().any())


def torch_step_breakdown(profile: Profile) -> TorchStepBreakdown:
    """The plugin's step-time breakdown and GPU figures of every host of `profile` (see the
    module doc); computed once per profile."""
    def build() -> TorchStepBreakdown:
        parts = host_parts(profile, torch_breakdown_part)
        return TorchStepBreakdown(
            pd.concat([p.part[0].assign(host=p.host) for p in parts], ignore_index=True)[
                STEP_COLUMNS],
            pd.concat([p.part[1].assign(host=p.host) for p in parts], ignore_index=True)[
                GPU_COLUMNS])
    return profile.memo(("torch_step_breakdown",), build)


def torch_breakdown_part(profile: Profile) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One host's steps and GPUs (analysis/hosts.py part), host column left empty."""
    events = _Events.of(profile)
    steps, names = _steps(profile, events)
    step_rows = _split(events, steps, names)
    return step_rows, _gpu_figures(profile, events, steps)


@dataclass(frozen=True)
class _Events:
    """The host's events the plugin reads, by what they are to it."""

    start: np.ndarray
    end: np.ndarray
    role: np.ndarray  # index into PARTS, -1 for steps and events it does not count
    is_cpu: np.ndarray  # a CPU op of any role (a trace without steps spans them)
    is_device: np.ndarray  # a kernel, copy or memset
    is_step: np.ndarray
    step_number: np.ndarray
    events: np.ndarray

    @classmethod
    def of(cls, profile: Profile) -> _Events:
        categories = meta_categories(profile)
        names = profile.metadata["name"].to_numpy(dtype=object)
        rows = np.arange(len(names))
        role = np.full(len(names), -1, np.int64)
        step_number = np.full(len(names), -1, np.int64)
        host_op = np.isin(categories, _CPU + _ANNOTATION)
        for row in rows[host_op].tolist():
            name = str(names[row])
            step = _STEP.match(name)
            if step:
                step_number[row] = int(step.group(1))
            elif _DATALOADER.search(name):
                role[row] = _LOADER
            elif name in _COLLECTIVES:
                role[row] = _COMM
            elif categories[row] in _CPU:
                role[row] = _CPU_ROLE
        role[np.isin(categories, KERNELS)] = _KERNEL
        role[np.isin(categories, _MEMCPY)] = _MEMCPY_ROLE
        role[np.isin(categories, _MEMSET)] = _MEMSET_ROLE
        role[np.isin(categories, _RUNTIME)] = _RUNTIME_ROLE
        counted = (role >= 0) | (step_number >= 0)
        events = np.flatnonzero(counted[profile.meta])
        meta = profile.meta[events]
        start = profile.start_ps[events]
        role_of = role[meta]
        kernels = np.flatnonzero(role_of == _KERNEL)
        role_of[kernels[_communication_kernels(profile, events, kernels, role_of)]] = _COMM
        return cls(start, start + profile.duration_ps[events], role_of,
                   np.isin(categories, _CPU)[meta], np.isin(categories, _DEVICE_WORK)[meta],
                   step_number[meta] >= 0, step_number[meta], events)


def _communication_kernels(profile: Profile, events: np.ndarray, kernels: np.ndarray,
                           role: np.ndarray) -> np.ndarray:
    """Which kernels are collectives: launched under a host collective op (its External id,
    the plugin's rule), or of a communication family (ours)."""
    comm_ops = events[role == _COMM]
    has_id, ids = int_stat(profile, comm_ops, "External id", "external id")
    has, kernel_ids = int_stat(profile, events[kernels], "External id", "external id")
    rows, inverse = np.unique(profile.meta[events[kernels]], return_inverse=True)
    names = profile.metadata["name"].to_numpy(dtype=object)[rows]
    family = np.array([is_communication(str(n)) for n in names], bool)
    return (has & np.isin(kernel_ids, ids[has_id])) | family[inverse.reshape(-1)]


def _steps(profile: Profile, ev: _Events) -> tuple[np.ndarray, list[str]]:
    """Each step's (start, end) in ps after stretching to the GPU, and its name."""
    step_events = np.flatnonzero(ev.is_step)
    if step_events.shape[0]:
        order = step_events[np.argsort(ev.start[step_events], kind="stable")]
        steps = np.stack([ev.start[order], ev.end[order]], axis=1)
        names = [str(n) for n in ev.step_number[order].tolist()]
    else:
        cpu = ev.is_cpu
        if not cpu.any():
            return np.zeros((0, 2), np.int64), []
        steps = np.array([[ev.start[cpu].min(), ev.end[cpu].max()]], np.int64)
        names = ["0"]
    return _on_device(profile, ev, steps, names)


def _on_device(profile: Profile, ev: _Events, steps: np.ndarray, names: list[str]
               ) -> tuple[np.ndarray, list[str]]:
    """The plugin's stretch of host steps to the GPU work they launched (module doc)."""
    runtime = np.flatnonzero(ev.role == _RUNTIME_ROLE)
    device = np.flatnonzero(ev.is_device)
    has_rt, rt_corr = int_stat(profile, ev.events[runtime], "correlation")
    has_dev, dev_corr = int_stat(profile, ev.events[device], "correlation")
    runtime, rt_corr = runtime[has_rt], rt_corr[has_rt]
    # the step whose span holds each runtime call whole (-1: none)
    k = np.searchsorted(steps[:, 0], ev.start[runtime], side="right") - 1
    inside = (k >= 0) & (ev.end[runtime] <= steps[np.maximum(k, 0), 1])
    step_of_corr = pd.Series(np.where(inside, k, -1), index=rt_corr)
    step_of_corr = step_of_corr[~step_of_corr.index.duplicated(keep="last")]
    dev_step = np.full(device.shape[0], -1, np.int64)
    dev_step[has_dev] = step_of_corr.reindex(dev_corr[has_dev]).fillna(-1).to_numpy(np.int64)
    matched = dev_step >= 0
    if not matched.any():
        return steps, names
    n = steps.shape[0]
    counts = np.bincount(dev_step[matched], minlength=n)
    first = np.full(n, np.iinfo(np.int64).max)
    last = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(first, dev_step[matched], ev.start[device[matched]])
    np.maximum.at(last, dev_step[matched], ev.end[device[matched]])
    prev = int(steps[0, 0])
    if counts[0]:
        ends = ev.end[device[~matched]]
        before = ends[ends < first[0]]
        prev = max(prev, int(before.max())) if before.shape[0] else prev
    out = steps.copy()
    for i in range(n):
        lo = max(prev, int(steps[i, 0]))
        hi = max(int(steps[i, 1]), int(last[i]) if counts[i] else lo)
        out[i] = (lo, max(hi, lo))
        prev = out[i, 1]
    keep = n
    if n > 1:
        launched = np.flatnonzero(counts)
        i = int(launched[-1])
        keep = i if i > 0 and counts[i - 1] * _TAIL_KEEP > counts[i] else i + 1
    return out[:keep], names[:keep]


def _split(ev: _Events, steps: np.ndarray, names: list[str]) -> pd.DataFrame:
    """Each step's time by the first part that covers each instant (module doc); the steps
    are disjoint (host steps follow each other, and stretched ones start where the last
    ended)."""
    if not steps.shape[0]:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("host", "step") else np.float64)
                             for c in STEP_COLUMNS})
    counted = ev.role >= 0
    cuts = _distinct(np.concatenate([ev.start[counted], ev.end[counted], steps.ravel()]))
    seg_lo, seg_len = cuts[:-1], np.diff(cuts)
    owner = np.full(seg_lo.shape[0], _OTHER, np.int64)  # Other unless a part covers it
    for role in range(_OTHER - 1, -1, -1):  # the first part in order wins: assign it last
        mine = ev.role == role
        if mine.any():
            owner[_covered(ev.start[mine], ev.end[mine], seg_lo)] = role
    k = np.searchsorted(steps[:, 0], seg_lo, side="right") - 1
    in_step = (k >= 0) & (seg_lo < steps[np.maximum(k, 0), 1])
    n = steps.shape[0]
    sums = np.bincount(k[in_step] * len(PARTS) + owner[in_step], weights=seg_len[in_step],
                       minlength=n * len(PARTS)).reshape(n, len(PARTS))
    frame = pd.DataFrame(sums / PS_PER_US, columns=PART_COLUMNS)
    frame.insert(0, "duration_us", (steps[:, 1] - steps[:, 0]) / PS_PER_US)
    frame.insert(0, "start_us", steps[:, 0] / PS_PER_US)
    frame.insert(0, "step", names)
    frame.insert(0, "host", "")
    return frame


def _distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values (np.unique hashes here, several times slower than a sort)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if values.shape[0] else values


def _covered(start: np.ndarray, end: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Whether each point lies in the union of [start, end)."""
    order = np.argsort(start, kind="stable")
    start, reach = start[order], np.maximum.accumulate(end[order])
    k = np.searchsorted(start, points, side="right") - 1
    return (k >= 0) & (reach[np.maximum(k, 0)] > points)


def _gpu_figures(profile: Profile, ev: _Events, steps: np.ndarray) -> pd.DataFrame:
    """Utilization, estimated SM efficiency and achieved occupancy per GPU (module doc)."""
    kernels = ev.events[np.isin(ev.role, (_KERNEL, _COMM)) & ev.is_device]
    if not kernels.shape[0] or not steps.shape[0]:
        return pd.DataFrame({c: pd.Series(dtype=object if c == "host" else np.float64)
                             for c in GPU_COLUMNS})
    has_device, device = int_stat(profile, kernels, "device")
    blocks = _floats(profile.stat_column(kernels, "blocks per SM"))
    occupancy = _floats(profile.stat_column(kernels, "est. achieved occupancy %"))
    start = profile.start_ps[kernels]
    end = start + profile.duration_ps[kernels]
    span_lo, span_hi = int(steps[0, 0]), int(steps[-1, 1])
    span = span_hi - span_lo
    rows = []
    for gpu in np.unique(device[has_device]).tolist():
        mine = has_device & (device == gpu)
        s, e = np.clip(start[mine], span_lo, span_hi), np.clip(end[mine], span_lo, span_hi)
        busy = _union(s, e)
        rows.append({"host": "", "device": int(gpu),
                     "gpu_utilization": busy / span if span > 0 else np.nan,
                     "est_sm_efficiency": _sm_efficiency(s, e, blocks[mine], span),
                     "est_achieved_occupancy_pct": _weighted(s, e, occupancy[mine])})
    return pd.DataFrame(rows, columns=GPU_COLUMNS)


def _floats(values: np.ndarray) -> np.ndarray:
    """An arg as float64, NaN where absent or not a number."""
    def number(v: object) -> float:
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else np.nan
    return np.fromiter((number(v) for v in values.tolist()), np.float64, values.shape[0])


def _union(start: np.ndarray, end: np.ndarray) -> int:
    cuts = _distinct(np.concatenate([start, end]))
    if cuts.shape[0] < 2:
        return 0
    return int(np.diff(cuts)[_covered(start, end, cuts[:-1])].sum())


def _sm_efficiency(start: np.ndarray, end: np.ndarray, blocks: np.ndarray, span: int
                   ) -> float | None:
    """Time-weighted sum of the running kernels' blocks per SM, each instant at most 1."""
    ok = blocks > 0
    if not ok.any() or span <= 0:
        return None
    cuts = _distinct(np.concatenate([start[ok], end[ok]]))
    lo = np.searchsorted(cuts, start[ok])
    hi = np.searchsorted(cuts, end[ok])
    level = np.zeros(cuts.shape[0] + 1)
    np.add.at(level, lo, blocks[ok])
    np.add.at(level, hi, -blocks[ok])
    running = np.cumsum(level)[:-2]
    weights = np.diff(cuts)
    used = (running > 1e-12) & (weights > 0)
    if not used.any():
        return None
    return float((np.minimum(running[used], 1.0) * weights[used]).sum()) / span


def _weighted(start: np.ndarray, end: np.ndarray, values: np.ndarray) -> float | None:
    """The values' mean weighted by each kernel's time inside the span (clipped already)."""
    ok = (values >= 0) & (end > start)
    if not ok.any():
        return None
    weight = (end[ok] - start[ok]).astype(np.float64)
    return float((values[ok] * weight).sum() / weight.sum())
