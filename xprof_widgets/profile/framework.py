"""What wrote a profile (JAX, TensorFlow, PyTorch), told from what its profiler leaves in it, and
how to capture XLA programs with that framework: the analyses' advice and the registry's checks
read it, so it sits on the profile floor, below both."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Profile


def framework(profile: Profile) -> str | None:
    """The framework that wrote the profile, from what its profiler leaves in it: PyTorch's
    (Kineto) names its threads and traces so, JAX names its programs `jit_...` and runs them on
    PjRt threads, TensorFlow runs its own kernels on `tf_Compute` and tf.data threads (JAX on CPU
    also has `tf_XLAEigen` threads, so those say nothing). None when nothing tells."""
    import pandas as pd

    names = pd.concat([profile.sections["name"], profile.built_tracks["name"]]).astype(str)
    modules = profile.hlo_modules["name"].astype(str)
    if (".pt.trace.json" in str(profile.source) or names.str.contains("PyTorch").any()
            or _has_torch_ops(profile)):
        return "PyTorch"
    if modules.str.match(r"(jit|pmap|xmap)_").any() or names.str.contains("PjRt|pjrt").any():
        return "JAX"
    if names.str.match(r"tf_(Compute|data_)").any() or modules.str.match(r"a_inference_").any():
        return "TensorFlow"
    return None


def _has_torch_ops(profile: Profile) -> bool:
    """Whether an event is of Kineto's category for PyTorch's ops (`cpu_op`; `Operator` before
    2022): a trace saved under another name, its processes unnamed, still says who wrote it."""
    try:
        metadata = profile.metadata
    except AttributeError:  # a pod's event metadata stays on its workers (NotDistributed)
        return False
    return any(isinstance(stats, dict) and stats.get("category") in ("cpu_op", "Operator")
               for stats in metadata["stats"])


_XLA_ADVICE = {
    "TensorFlow": "This TensorFlow run executed its ops as TensorFlow kernels, not XLA programs. "
                  "Compile the step with XLA (tf.function(jit_compile=True), or "
                  "model.compile(jit_compile=True) in Keras) and profile it with "
                  "tf.profiler.experimental.start(logdir) / stop(), or TensorBoard's Keras "
                  "callback (profile_batch=...).",
    "JAX": "Profile jitted steps with `with jax.profiler.trace(logdir):` (or %%xprof) and open "
           "the .xplane.pb it writes.",
    "PyTorch": "PyTorch's own profiler (Kineto) records no XLA programs. On PyTorch/XLA, capture "
               "with torch_xla.debug.profiler (start_server, then trace) to get an .xplane.pb.",
}


def xla_advice(profile: Profile) -> str:
    """How to capture XLA programs (what the Op Profile, HLO tools and Memory Viewer read) with
    the framework that made this profile."""
    known = framework(profile)
    if known is not None:
        return _XLA_ADVICE[known]
    return ("Profile XLA programs with your framework's profiler: jax.profiler.trace (JAX), "
            "tf.profiler.experimental.start with jit_compile=True (TensorFlow), "
            "torch_xla.debug.profiler (PyTorch/XLA).")
