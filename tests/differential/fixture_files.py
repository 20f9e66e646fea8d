"""Every profile committed under tests/data, by format: what the differential tests run on."""

from __future__ import annotations

import gzip
from pathlib import Path

DATA = Path(__file__).parents[1] / "data"

JAX_GPU = sorted(DATA.glob("public/tracelens/**/*.xplane.pb"))
"""JAX GPU xplanes (MI300X, JAX 0.6 and 0.8): held to XProf in Kernel Stats and Framework Op
Stats; the op profile's categories, programs and cost model on them are not XProf's yet."""
XSPACE = sorted(p for p in [*DATA.glob("*.xplane.pb"), *DATA.glob("public/**/*.xplane.pb")]
                if p not in JAX_GPU)
"""XSpace fixtures every tool is held to XProf on: real ones (TPU v6e, JAX CPU, TensorFlow CPU;
XProf's own 2020 TensorFlow GPU demo from the public corpus) and synthetic TPU/GPU ones."""

CHROME = sorted([*DATA.glob("*.trace.json.gz"),
                 *(p for p in DATA.glob("torch_*/*.json*") if not p.name.startswith("key_averages"))])
"""Chrome traces: JAX's own `.trace.json.gz` and PyTorch's, as PyTorch and HTA users save them
(beside them, `key_averages*.json`: PyTorch's own answers for a trace, not traces)."""


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DATA)) for p in paths]



def _text(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


KINETO_PUBLIC = sorted(p for p in DATA.glob("public/**/*.json*")
                       if b'"traceEvents"' in (text := _text(p)) and b'"cat"' in text)
"""PyTorch profiler (Kineto) traces of the public corpus (HTA's test traces, PARAM's DLRM run,
torch-tb-profiler's ResNet50 V100 sample; not its kept answers beside it, which are no trace)."""
KINETO_PUBLIC_GPU = [p for p in KINETO_PUBLIC if b'"stream"' in _text(p)]
"""Those with GPU work (events that name a stream)."""
