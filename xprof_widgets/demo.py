"""A real JAX profile made on the CPU in seconds: a small MLP trained with an input pipeline.

`python -m xprof_widgets.demo LOGDIR [--steps N]` writes
`LOGDIR/plugins/profile/<run>/<host>.xplane.pb` (and JAX's `.trace.json.gz`) and prints the
xplane path. Tools are tested against what this profile is known to contain:

- every step is a `StepTraceAnnotation("train", step_num=i)`, so the xplane has events named
  `train` with stats `step_num` = i and `_r` = 1;
- inside each step the Python input pipeline runs first, under `TraceAnnotation`s named
  `input_pipeline` > `load_batch` then `preprocess_batch`; the jitted train step follows and the
  step blocks on its result, so a step's time is input time + compute time;
- a step's input share is the duration of its `input_pipeline` event over that of its `train`
  event. The steps in `input_bound_steps(n)` (every `INPUT_BOUND_EVERY`-th step: 3, 7, 11, ...)
  sleep `INPUT_SLEEP_S` in `load_batch`, about 25 times a step's compute on two idle cores
  (12 ms): on a quiet machine their share is at least `MIN_INPUT_SHARE_BOUND` (about 0.96) and
  every other step's at most `MAX_INPUT_SHARE_OTHER` (about 0.06). On a busy one both move (the
  compute slows, a short step can be preempted mid-input: one read 0.36), but the stalled steps
  still wait for input longer than any other step, and the run stays HIGHLY input-bound.

JAX is imported inside the functions only: `import xprof_widgets` never pays for it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

INPUT_BOUND_EVERY = 4
INPUT_SLEEP_S = 0.3
MIN_INPUT_SHARE_BOUND = 0.5
MAX_INPUT_SHARE_OTHER = 0.35
DEFAULT_STEPS = 16
BATCH, FEATURES, HIDDEN, CLASSES = 256, 256, 1024, 16
INPUT_NAMES = ("input_pipeline", "load_batch", "preprocess_batch")


def input_bound_steps(steps: int) -> list[int]:
    """The step numbers whose loader stalls."""
    return [i for i in range(steps) if i % INPUT_BOUND_EVERY == INPUT_BOUND_EVERY - 1]


def _load_batch(step: int, stall_s: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Makes a batch the way a reader would; a stall stands for a slow disk."""
    rng = np.random.default_rng(step)
    time.sleep(stall_s)
    x = rng.integers(0, 256, size=(BATCH, FEATURES), dtype=np.uint8)
    y = (x[:, :CLASSES].argmax(axis=1)).astype(np.int32)
    return x, y


def _preprocess(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xf = x.astype(np.float32) / 255.0
    return (xf - xf.mean(axis=0)) / (xf.std(axis=0) + 1e-3), y


def _train_step_fn():
    import jax
    import jax.numpy as jnp

    def loss_fn(params, x, y):
        h = jax.nn.relu(x @ params["w1"] + params["b1"])
        h = jax.nn.relu(h @ params["w2"] + params["b2"])
        logits = h @ params["w3"]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

    @jax.jit
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads), loss

    return train_step


def _init_params():
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    shapes = {
        "w1": (FEATURES, HIDDEN),
        "b1": (HIDDEN,),
        "w2": (HIDDEN, HIDDEN),
        "b2": (HIDDEN,),
        "w3": (HIDDEN, CLASSES),
    }
    return {k: jnp.asarray(rng.normal(0, 0.05, s).astype(np.float32)) for k, s in shapes.items()}


def run_demo(logdir: str | Path, steps: int = DEFAULT_STEPS) -> Path:
    """Trains `steps` steps under `jax.profiler.trace(logdir)`; returns the xplane.pb written."""
    import jax

    logdir = Path(logdir)
    before = set(logdir.glob("plugins/profile/*/*.xplane.pb"))
    train_step = _train_step_fn()
    params = _init_params()
    # Compile outside the trace so that step 0 is a step, not a compilation.
    x, y = _preprocess(*_load_batch(0))
    params, loss = train_step(params, x, y)
    loss.block_until_ready()
    bound = set(input_bound_steps(steps))
    with jax.profiler.trace(str(logdir)):
        for i in range(steps):
            stall = INPUT_SLEEP_S if i in bound else 0.0
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                with jax.profiler.TraceAnnotation("input_pipeline"):
                    with jax.profiler.TraceAnnotation("load_batch"):
                        raw = _load_batch(i, stall)
                    with jax.profiler.TraceAnnotation("preprocess_batch"):
                        x, y = _preprocess(*raw)
                params, loss = train_step(params, x, y)
                loss.block_until_ready()
    written = sorted(set(logdir.glob("plugins/profile/*/*.xplane.pb")) - before)
    if not written:
        raise RuntimeError(f"jax.profiler.trace wrote no xplane.pb under {logdir}")
    return written[-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m xprof_widgets.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("logdir", help="where jax.profiler.trace writes plugins/profile/<run>/")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="training steps to trace")
    args = parser.parse_args(argv)
    print(run_demo(args.logdir, args.steps))


if __name__ == "__main__":
    main()
