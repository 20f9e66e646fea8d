"""What XProf's step grouping leaves out of a CPU run's host compute, recounted plainly.

On a CPU-only run our host compute holds the XLA ops the host's threads run inside a step
(step_breakdown.py). XProf counts a worker thread's event in a step only where its grouping ties
it to the step through flows; on most steps of the fixtures it does not, and it counts the
stepping thread's own work alone. `worker_only_us` is the time inside each step marker when an
XLA op runs and nothing else of the step does: our host compute less that is what XProf counts
before its grouping adds anything (xprof_oracle.ADDS_HOST_COMPUTE)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from xprof_widgets.analysis.input_events import host_input_events
from xprof_widgets.analysis.step_breakdown import cpu_xla_ops, host_step_work
from xprof_widgets.analysis.steps import find_steps, host_tracks, track_events
from xprof_widgets.profile.model import PS_PER_US


def worker_only_us(profile, pattern: str) -> pd.Series:
    """Per step number (one host, no device): XLA-op time inside the marker that no other work
    of the step covers, in microseconds."""
    steps = find_steps(profile)
    host = host_input_events(profile, steps, pattern)
    compiling_meta = np.array(["compil" in n.lower() for n in profile.display_names.tolist()])
    on_host = track_events(profile, host_tracks(profile))
    compiling = on_host[compiling_meta[profile.meta[on_host]]]
    other = np.concatenate([host_step_work(profile, steps), host.events, compiling])
    sections = profile.sections["name"][profile.sections["kind"] == "host"].tolist()
    xla = np.concatenate([cpu_xla_ops(profile, s) for s in sections])
    out = {}
    for row in steps.markers.itertuples():
        window = (int(row.start_ps), int(row.end_ps))
        out[int(row.step)] = (_covered(profile, np.concatenate([other, xla]), window)
                              - _covered(profile, other, window)) / PS_PER_US
    return pd.Series(out, dtype=np.float64)


def _covered(profile, events: np.ndarray, window: tuple[int, int]) -> int:
    """How much of the window the events cover, by a plain sweep over their clipped spans."""
    start = np.clip(profile.start_ps[events], *window)
    end = np.clip(profile.start_ps[events] + profile.duration_ps[events], *window)
    total, reach = 0, window[0]
    for a, b in sorted(zip(start.tolist(), end.tolist(), strict=True)):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total
