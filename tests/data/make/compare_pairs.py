"""Make tests/data/compare/: pairs of real JAX CPU profiles that differ in one known way.

Every profile is the same kind of loop, traced with jax.profiler.trace (Python tracer off, so
the files stay small; host tracer at its default level):

    for i in range(STEPS):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            with jax.profiler.TraceAnnotation("load_batch"):
                batch = loader(i)              # numpy, plus a sleep standing for a slow disk
            state = train_step(state, batch)   # a jitted SGD step of a 2-layer MLP
            jax.block_until_ready(state)

The train step is compiled and run once before the trace starts. The pairs (before / after):

  loader_slow / loader_fast   the same step (batch 256), the loader sleeping 30 ms vs 2 ms:
                              after's steps are ~28 ms shorter, all of it input time; the ops
                              are the same
  batch_small / batch_large   loader sleeping 2 ms, batch 128 vs 512: every op of the train
                              step has 4x the rows, so the matmuls are slower; same op names
  loader_fast / unfused       the fused pair: loader_fast's step computes its input features
                              `gelu(x * 1.5 + 0.25)` inside the one jitted step (`jit_step`, where
                              XLA fuses the chain into a loop fusion) vs the same chain op by op,
                              each under its own jax.jit (`jit_scale`, `jit_shift`, `jit_gelu`),
                              called from Python before `jit_step` on the features: ops removed
                              from `jit_step`, ops added in programs of their own, and the fusions
                              of `jit_step` renumbered

Run it from the repo root with the project's venv (JAX 0.10.2 on the CPU made the committed
files); it rewrites the five files and prints their sizes:

    .venv/bin/python tests/data/make/compare_pairs.py

Seeds and sleeps are fixed; compute timings vary with the machine's load.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "compare")
STEPS = 6
FEATURES, HIDDEN, CLASSES = 128, 512, 16
SLOW_S, FAST_S = 0.030, 0.002


def _loader(batch: int, sleep_s: float):
    def load(step: int) -> tuple[np.ndarray, np.ndarray]:
        time.sleep(sleep_s)
        rng = np.random.default_rng(step)
        x = rng.standard_normal((batch, FEATURES), dtype=np.float32)
        return x, (x[:, :CLASSES].argmax(axis=1)).astype(np.int32)
    return load


def _params():
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    shapes = {"w1": (FEATURES, HIDDEN), "b1": (HIDDEN,), "w2": (HIDDEN, CLASSES)}
    return {k: jnp.asarray(rng.normal(0, 0.05, s).astype(np.float32)) for k, s in shapes.items()}


def _features(x):
    """Input features: an elementwise chain XLA fuses into one loop fusion when jitted whole."""
    import jax

    return jax.nn.gelu(x * 1.5 + 0.25)


def _jitted_step():
    """The SGD step on features it is given (`jit_step` in the HLO)."""
    import jax
    import jax.numpy as jnp

    def loss(params, f, y):
        h = jax.nn.relu(f @ params["w1"] + params["b1"])
        logits = h @ params["w2"]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

    def step(params, f, y):
        grads = jax.grad(loss)(params, f, y)
        return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

    return step


def _fused_step():
    """Features and update in one program, `jit_step`."""
    import jax

    update = _jitted_step()

    @jax.jit
    def step(params, x, y):
        return update(params, _features(x), y)

    return step


def _unfused_step():
    """The features op by op, each its own program (`jit_scale`, `jit_shift`, `jit_gelu`),
    called from Python; then `jit_step` on the result."""
    import jax

    def scale(x):
        return x * 1.5

    def shift(x):
        return x + 0.25

    scale, shift, gelu = jax.jit(scale), jax.jit(shift), jax.jit(jax.nn.gelu)
    step = jax.jit(_jitted_step())

    def run(params, x, y):
        return step(params, gelu(shift(scale(x))), y)

    return run


def _trace(name: str, step_fn, batch: int, sleep_s: float) -> None:
    import jax

    load = _loader(batch, sleep_s)
    params = _params()
    params = step_fn(params, *load(99))  # compile before tracing
    jax.block_until_ready(params)
    tmp = tempfile.mkdtemp(prefix=f"xw-compare-{name}-")
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    try:
        with jax.profiler.trace(tmp, profiler_options=options):
            for i in range(STEPS):
                with jax.profiler.StepTraceAnnotation("train", step_num=i):
                    with jax.profiler.TraceAnnotation("load_batch"):
                        x, y = load(i)
                    params = step_fn(params, x, y)
                    jax.block_until_ready(params)
        found = glob.glob(os.path.join(tmp, "plugins", "profile", "*", "*.xplane.pb"))
        assert len(found) == 1, found
        target = os.path.join(OUT, f"{name}.xplane.pb")
        shutil.copyfile(found[0], target)
        print(f"{target}: {os.path.getsize(target):,} bytes")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PROFILES = {  # name: (step, batch rows, loader sleep)
    "loader_slow": (_fused_step, 256, SLOW_S),
    "loader_fast": (_fused_step, 256, FAST_S),
    "batch_small": (_fused_step, 128, FAST_S),
    "batch_large": (_fused_step, 512, FAST_S),
    "unfused": (_unfused_step, 256, FAST_S),
}


def main() -> None:
    """Each profile in a fresh process: JAX writes every module the process compiled into a
    profile, and a profile should hold its own program only."""
    if len(sys.argv) == 2:
        make, batch, sleep_s = PROFILES[sys.argv[1]]
        _trace(sys.argv[1], make(), batch, sleep_s)
        return
    os.makedirs(OUT, exist_ok=True)
    for name in PROFILES:
        subprocess.run([sys.executable, __file__, name], check=True)


if __name__ == "__main__":
    main()
