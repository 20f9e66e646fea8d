"""The step schedule shared by a host and its devices, and the ids that link their events.

Time is in picoseconds from the start of the profile. A step k runs on the host as:
`train` starts at `start`; the input wait (`Iterator::Prefetch`) takes `input`; the jitted call
(`PjitFunction`) takes `dispatch` and enqueues the programs; each device starts its programs
`DEVICE_LATENCY_PS[d]` after `launch`; the host blocks until the slowest device is done and the
next step starts `SYNC_PS` later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

US = 1_000_000  # picoseconds per microsecond
FIRST_STEP_PS = 2_000 * US
LINE_START_NS = 1_000_000  # host and GPU lines: relative timestamps from here
INPUT_LEAD_PS = 4 * US
INPUT_GAP_PS = 6 * US
SYNC_PS = 15 * US
INPUT_BOUND_EVERY = 10  # steps 9, 19, 29, ... wait for input
INPUT_BOUND_FACTOR = 3.0  # ... for about this many times the device's step time
EVAL_EVERY = 25  # steps 24, 49, ... also run the eval program
EVAL_GAP_PS = 5 * US  # between a step's training program and its eval program


def device_latency_ps(device: int) -> int:
    return 12 * US + 700_000 * device


def plan_devices(n_devices: int, evals: np.ndarray, end_column: int,
                 draw: Callable[[], tuple[tuple, tuple]]) -> tuple[list, np.ndarray]:
    """Each device's (train, eval) timelines, drawn in device order, and the busy time after
    launch of each step on the slowest device (its eval program, where it runs one, after
    EVAL_GAP_PS). `end_column` is where a timeline keeps each step's end."""
    plans, busy = [], np.zeros(len(evals), dtype=np.int64)
    for d in range(n_devices):
        train, evaluation = draw()
        end = train[end_column].copy()
        end[evals] += EVAL_GAP_PS + evaluation[end_column]
        busy = np.maximum(busy, device_latency_ps(d) + end)
        plans.append((train, evaluation))
    return plans, busy


def is_input_bound(step: np.ndarray) -> np.ndarray:
    return step % INPUT_BOUND_EVERY == INPUT_BOUND_EVERY - 1


def is_eval(step: np.ndarray) -> np.ndarray:
    return step % EVAL_EVERY == EVAL_EVERY - 1


@dataclass
class Steps:
    """One chunk of consecutive steps; every field is an array over the chunk's steps."""

    index: np.ndarray
    start: np.ndarray
    input: np.ndarray
    dispatch: np.ndarray
    end: np.ndarray

    @property
    def input_start(self) -> np.ndarray:
        return self.start + INPUT_LEAD_PS

    @property
    def dispatch_start(self) -> np.ndarray:
        return self.input_start + self.input + INPUT_GAP_PS

    @property
    def launch(self) -> np.ndarray:
        """When the host has enqueued the step's programs."""
        return self.dispatch_start + self.dispatch

    @property
    def eval(self) -> np.ndarray:
        return is_eval(self.index)


def plan_steps(
    index: np.ndarray,
    first_start: int,
    nominal_ps: float,
    busy: np.ndarray,
    rng: np.random.Generator,
) -> Steps:
    """Host timings for these steps, given how long the devices are busy after `launch`."""
    n = len(index)
    bound = is_input_bound(index)
    input_ps = nominal_ps * np.where(
        bound, INPUT_BOUND_FACTOR * rng.uniform(0.9, 1.1, n), rng.uniform(0.015, 0.04, n)
    )
    dispatch = rng.uniform(80, 200, n) * US * np.where(is_eval(index), 1.5, 1.0)
    input_ps, dispatch = input_ps.astype(np.int64), dispatch.astype(np.int64)
    length = INPUT_LEAD_PS + input_ps + INPUT_GAP_PS + dispatch + busy + SYNC_PS
    start = first_start + np.concatenate([[0], np.cumsum(length)[:-1]])
    return Steps(index, start, input_ps, dispatch, start + length)


def host_flow_id(step, slot, device) -> np.ndarray:
    """`_p`/`_c` id linking a host DoEnqueueProgram to a device module (slot 0 train, 1 eval)."""
    return (np.int64(1) << 40) + (np.asarray(step, dtype=np.int64) * 2 + slot) * 256 + device


def async_flow(flow_id: np.ndarray, direction: int) -> np.ndarray:
    """The `flow` stat: direction in bits 0-1 (1 in, 2 out, 3 both), id in bits 2-57, category 0."""
    return (np.asarray(flow_id, dtype=np.uint64) << np.uint64(2)) | np.uint64(direction)
