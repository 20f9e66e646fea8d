"""tests/bench/xprof_memory_reference.py loaded once for the unit tests: the readers of HLO protos
from profiles and the synthetic modules the XProf comparison was recorded on."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).parents[1] / "bench" / "xprof_memory_reference.py"
_spec = importlib.util.spec_from_file_location("xprof_memory_reference", _PATH)
REF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REF)
