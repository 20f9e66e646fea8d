"""Tabs only with data (issue 22.8): which tools the suite offers, and the framework a profile
tells, whose capture advice replaces a JAX-only hint."""

from __future__ import annotations

from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets import tools

DATA = Path(__file__).resolve().parents[1] / "data"
CASES = {
    "tf_keras_cpu_slow_map.xplane.pb": "TensorFlow",
    "tf_keras_cpu_fast.xplane.pb": "TensorFlow",
    "tpu_v6e_inference.xplane.pb": "JAX",
    "jax_cpu_demo.xplane.pb": "JAX",  # also has tf_XLAEigen threads: not TensorFlow for that
    "synthetic_tpu.xplane.pb": "JAX",
    "torch_tiny_mlp.pt.trace.json.gz": "PyTorch",
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_framework_a_profile_tells(name):
    assert tools.framework(xw.open_profile(DATA / name)) == CASES[name]


def test_xla_tools_are_offered_only_where_there_are_xla_ops_and_hlo_protos():
    def keys(name):
        return [t.key for t in tools.offered(xw.open_profile(DATA / name))]

    for tf in ("tf_keras_cpu_slow_map.xplane.pb", "tf_keras_cpu_fast.xplane.pb"):
        assert not {"op", "memory"} & set(keys(tf)) and "overview" in keys(tf)
    assert not {"op", "memory"} & set(keys("torch_tiny_mlp.pt.trace.json.gz"))
    for xla in ("tpu_v6e_inference.xplane.pb", "jax_cpu_demo.xplane.pb"):
        assert {"op", "memory"} <= set(keys(xla))


def test_the_op_profile_of_a_tf_run_advises_tensorflow_not_jax():
    summary = xw.OpProfile(DATA / "tf_keras_cpu_slow_map.xplane.pb")._summary
    assert "no XLA ops" in summary["error"] and "jit_compile=True" in summary["error"]
    assert "jax.profiler" not in summary["error"]
    torch = xw.OpProfile(DATA / "torch_tiny_mlp.pt.trace.json.gz")._summary["error"]
    assert "torch_xla" in torch and "jax.profiler" not in torch
