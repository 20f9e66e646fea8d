"""Make tests/data/jax_cpu_sharded.xplane.pb: JAX data-parallel training over 4 CPU devices.

What the program does:
  * XLA_FLAGS=--xla_force_host_platform_device_count=4 is set before jax is
    imported, so the CPU backend has 4 devices (TFRT_CPU_0..3);
  * a small MLP (32 -> 64 -> 8, tanh, MSE, plain SGD) whose parameters are
    replicated (NamedSharding(mesh, P())) and whose batch (64 rows) is split
    over a 1-D mesh axis "data" (NamedSharding(mesh, P("data")));
  * train_step is one jax.jit with in/out shardings; the SPMD partitioner
    turns the gradient sum over the batch into all-reduce ops in the HLO;
  * the step is compiled and run once before tracing, then 6 steps run under
    jax.profiler.trace(logdir), each inside
    jax.profiler.StepTraceAnnotation("train", step_num=i) (i = 0..5) with
    jax.block_until_ready inside the annotation.
The .xplane.pb is copied out of the temp logdir, which is removed.

Run (from the repo root):

  python3 -m venv /tmp/fx-jax
  /tmp/fx-jax/bin/pip install jax jaxlib          # 0.10.2 / 0.10.2 used
  /tmp/fx-jax/bin/python tests/data/make/jax_cpu_sharded.py

Seeds are fixed (jax.random.key(0)); timings vary.
"""
import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=4").strip()

import glob
import shutil
import tempfile

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "jax_cpu_sharded.xplane.pb")
STEPS, BATCH, D_IN, D_HID, D_OUT = 6, 64, 32, 64, 8


def init(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (D_IN, D_HID)) / D_IN ** 0.5,
            "b1": jnp.zeros(D_HID),
            "w2": jax.random.normal(k2, (D_HID, D_OUT)) / D_HID ** 0.5,
            "b2": jnp.zeros(D_OUT)}


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def main():
    devices = jax.devices()
    assert len(devices) == 4, devices
    mesh = Mesh(devices, ("data",))
    repl, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))

    @jax.jit
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss

    key = jax.random.key(0)
    params = jax.device_put(init(key), repl)
    kx, ky = jax.random.split(jax.random.fold_in(key, 1))
    x = jax.device_put(jax.random.normal(kx, (BATCH, D_IN)), split)
    y = jax.device_put(jax.random.normal(ky, (BATCH, D_OUT)), split)

    params, loss = train_step(params, x, y)          # compile before tracing
    jax.block_until_ready((params, loss))
    hlo = train_step.lower(params, x, y).compile().as_text()
    assert "all-reduce" in hlo, "no all-reduce in the compiled step"

    tmp = tempfile.mkdtemp(prefix="fx-jax-sharded-")
    try:
        with jax.profiler.trace(tmp):
            for i in range(STEPS):
                with jax.profiler.StepTraceAnnotation("train", step_num=i):
                    params, loss = train_step(params, x, y)
                    jax.block_until_ready((params, loss))
        found = glob.glob(os.path.join(tmp, "plugins", "profile", "*", "*.xplane.pb"))
        assert len(found) == 1, found
        shutil.copyfile(found[0], OUT)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(OUT, os.path.getsize(OUT), "bytes; final loss", float(loss))


if __name__ == "__main__":
    main()
