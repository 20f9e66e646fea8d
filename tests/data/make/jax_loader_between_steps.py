"""Make tests/data/jax_loader_between_steps.xplane.pb: a JAX loop whose loader runs between steps.

The usual user loop, with the batch fetched by the `for` statement, outside
the step annotation:

    loader = DataLoader(...)     # plain Python class, no annotations
    for i, batch in enumerate(loader):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            state = train_step(state, batch); jax.block_until_ready(state)

What the program does:
  * one CPU device (no forced device count);
  * train_step is a jax.jit of an SGD step on a 1024x1024 weight matrix:
    loss = mean(tanh(tanh(x @ w) @ w) ** 2) for a 384x1024 float32 batch x,
    ~25-30 ms per step on the 2-core machine it was made on;
  * DataLoader.__next__ makes batch i as np.roll(base, i, axis=0) * 0.5
    (~1-2 ms); before producing batches 3 and 7 it also does
    time.sleep(0.04), so steps 3 and 7 are preceded by a 40 ms stall that is
    NOT inside any step annotation;
  * train_step is compiled and run once (on a batch from a separate loader)
    before the trace starts; then 10 steps (step_num 0..9) run under
    jax.profiler.trace(logdir), with jax's default profiler options (the
    Python tracer is on, so DataLoader.__next__ appears as a
    "$<file>.py:<line> __next__" event on the "python" line).
The .xplane.pb is copied out of the temp logdir, which is removed.

Run (from the repo root):

  python3 -m venv /tmp/fx-jax
  /tmp/fx-jax/bin/pip install jax jaxlib          # 0.10.2 / 0.10.2 used
  /tmp/fx-jax/bin/python tests/data/make/jax_loader_between_steps.py

Seeds and sleeps are fixed; compute timings vary with the machine's load.
"""
import glob
import os
import shutil
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "jax_loader_between_steps.xplane.pb")
STEPS, B, D = 10, 384, 1024
STALL_BEFORE = (3, 7)     # batches whose production sleeps first
STALL_S = 0.04


class DataLoader:
    """A plain Python loader: no annotations, no threads."""

    def __init__(self, n, seed=0):
        self.n = n
        self.base = np.random.default_rng(seed).random((B, D), dtype=np.float32)

    def __iter__(self):
        self.i = 0
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        if self.i in STALL_BEFORE:
            time.sleep(STALL_S)
        batch = np.roll(self.base, self.i, axis=0) * 0.5
        self.i += 1
        return batch


def loss_fn(w, x):
    h = jnp.tanh(x @ w)
    h = jnp.tanh(h @ w)
    return jnp.mean(h ** 2)


@jax.jit
def train_step(w, x):
    return w - 0.01 * jax.grad(loss_fn)(w, x)


def main():
    state = jnp.eye(D, dtype=jnp.float32) * 0.5
    state = train_step(state, next(iter(DataLoader(1, seed=1))))   # compile first
    jax.block_until_ready(state)

    loader = DataLoader(STEPS)
    tmp = tempfile.mkdtemp(prefix="fx-jax-loader-")
    try:
        with jax.profiler.trace(tmp):
            for i, batch in enumerate(loader):
                with jax.profiler.StepTraceAnnotation("train", step_num=i):
                    state = train_step(state, batch)
                    jax.block_until_ready(state)
        found = glob.glob(os.path.join(tmp, "plugins", "profile", "*", "*.xplane.pb"))
        assert len(found) == 1, found
        shutil.copyfile(found[0], OUT)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
