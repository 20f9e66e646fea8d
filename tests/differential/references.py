"""What the differential tests share on the way to their references: a trace's bytes and JSON
(gzipped or not), the corpus traces whose text holds some marks, and HTA run quietly over a
directory of its own holding some rank files (as HTA's own tests load their data)."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def trace_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def read_json(path: Path) -> Any:
    return json.loads(trace_bytes(path))


def traces_holding(root: Path, *marks: bytes, lacking: bytes | None = None) -> list[Path]:
    """The `*.json*` files under `root`, in name order, whose text holds every mark (and not
    `lacking`): `b'"traceEvents"'` and a category say a Kineto trace with those events."""
    found = []
    for path in sorted(root.rglob("*.json*")):
        text = trace_bytes(path)
        if all(m in text for m in marks) and (lacking is None or lacking not in text):
            found.append(path)
    return found


@contextmanager
def hta_on(*paths: Path) -> Iterator[Any]:
    """HTA's TraceAnalysis over a temporary directory holding copies of the files, its warnings
    and logging silenced while it runs; the directory goes afterwards."""
    import hta.trace_analysis as hta_analysis

    tmp = Path(tempfile.mkdtemp(prefix="hta_reference_"))
    try:
        for path in paths:
            shutil.copy(path, tmp / path.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.disable(logging.CRITICAL)
            try:
                yield hta_analysis.TraceAnalysis(trace_dir=str(tmp))
            finally:
                logging.disable(logging.NOTSET)
    finally:
        shutil.rmtree(tmp)
