"""The wheel `pip wheel .` builds from this tree, kept under the user's cache dir.

Building it runs Cython and the C compiler on every kernel (a minute or more), so it is built once
per state of the sources: keyed by the hash of every file that goes into it and the Python
version. tests/unit/test_wheel.py and `make test-colab` share it.

    python tests/wheel_cache.py    # prints the wheel's path, building it first if needed
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "xprof_widgets" / "wheels"
KEEP = 3
"""Builds kept: the sources as they are and a few states back (a branch switched to and fro)."""


def sources() -> list[Path]:
    """Every file the wheel is built from."""
    files = [ROOT / name for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md")]
    files += [ROOT / "js" / name for name in ("package.json", "package-lock.json", "build.mjs")]
    files += sorted((ROOT / "js" / "src").rglob("*.js"))
    files += sorted(path for path in (ROOT / "xprof_widgets").rglob("*")
                    if path.is_file() and path.suffix in (".py", ".pyx", ".pxd")
                    and "__pycache__" not in path.parts)
    return [path for path in files if path.is_file()]


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sources():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(f"{sys.version_info[:2]}".encode())
    return digest.hexdigest()[:16]


def wheel() -> Path:
    """The wheel of the current sources, built with this interpreter if not cached yet."""
    out = CACHE / source_hash()
    found = sorted(out.glob("xprof_widgets-*.whl"))
    if found:
        return found[0]
    building = out.with_name(out.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q",
                             "-w", str(building)], cwd=ROOT, capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"pip wheel . failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    building.rename(out)
    _prune()
    (wheel_path,) = out.glob("xprof_widgets-*.whl")
    return wheel_path


def _prune(keep: int = KEEP) -> None:
    """Drops all but the newest builds: every edit of a source makes another (5 MB each)."""
    builds = sorted((p for p in CACHE.iterdir() if not p.name.endswith(".building")),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in builds[keep:]:
        shutil.rmtree(old, ignore_errors=True)


if __name__ == "__main__":
    print(wheel())
