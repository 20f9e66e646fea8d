"""The wheel `pip wheel .` builds installs and runs where no compiler and no Node.js exist.

The wheel is built once per test session (minutes: Cython and the C compiler run for every
kernel) and kept under the user's cache dir keyed by the hash of every file that goes into it, so
a later session with the same sources reuses it. It is installed into a new, empty venv whose
PATH holds nothing but that venv (CC=/bin/false), and the venv opens a real profile and draws
the Trace Viewer's first window. XPROF_WIDGETS_SKIP_WHEEL_TEST=1 skips the module.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "xprof_widgets" / "wheels"

pytestmark = [
    pytest.mark.wheel,
    pytest.mark.skipif(os.environ.get("XPROF_WIDGETS_SKIP_WHEEL_TEST") == "1",
                       reason="XPROF_WIDGETS_SKIP_WHEEL_TEST=1"),
]


def _sources() -> list[Path]:
    """Every file the wheel is built from."""
    files = [ROOT / name for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md")]
    files += [ROOT / "js" / name for name in ("package.json", "package-lock.json", "build.mjs")]
    files += sorted((ROOT / "js" / "src").rglob("*.js"))
    files += sorted(path for path in (ROOT / "xprof_widgets").rglob("*")
                    if path.is_file() and path.suffix in (".py", ".pyx", ".pxd")
                    and "__pycache__" not in path.parts)
    return [path for path in files if path.is_file()]


def _source_hash() -> str:
    digest = hashlib.sha256()
    for path in _sources():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(f"{sys.version_info[:2]}".encode())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def wheel() -> Path:
    out = CACHE / _source_hash()
    found = sorted(out.glob("xprof_widgets-*.whl"))
    if found:
        return found[0]
    building = out.with_name(out.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q",
                             "-w", str(building)], cwd=ROOT, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    shutil.rmtree(out, ignore_errors=True)
    building.rename(out)
    (wheel_path,) = out.glob("xprof_widgets-*.whl")
    return wheel_path


@pytest.fixture(scope="session")
def bare_env(tmp_path_factory) -> dict[str, str]:
    """An environment with no compiler and no Node.js: PATH is an empty folder's, CC fails."""
    empty = tmp_path_factory.mktemp("no_tools")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "VIRTUAL_ENV", "NUMBA", "CONDA"))}
    env.update(PATH=str(empty), CC="/bin/false", CXX="/bin/false", LDSHARED="/bin/false",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


@pytest.fixture(scope="session")
def venv(wheel: Path, bare_env: dict[str, str], tmp_path_factory) -> Path:
    """A new venv with the wheel and its dependencies (binary wheels only) installed."""
    where = tmp_path_factory.mktemp("wheel_venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    python = where / "bin" / "python"
    env = dict(bare_env, PATH=f"{where / 'bin'}{os.pathsep}{bare_env['PATH']}")
    result = subprocess.run([str(python), "-m", "pip", "install", "-q", "--only-binary=:all:",
                             str(wheel)], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return where


def test_the_wheel_holds_compiled_kernels_and_js_bundles_not_sources(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    kernels = sorted(path.stem for path in (ROOT / "xprof_widgets" / "_native").glob("*.pyx"))
    assert kernels
    for kernel in kernels:
        assert [n for n in names if n.startswith(f"xprof_widgets/_native/{kernel}.")
                and n.endswith((".so", ".pyd"))], f"no compiled {kernel} in {wheel.name}"
    bundles = sorted(path.name for path in (ROOT / "js" / "src").glob("*.js"))
    assert bundles
    for bundle in bundles:
        assert f"xprof_widgets/static/{bundle}" in names
    assert not [n for n in names if n.endswith((".pyx", ".pxd", ".c"))]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert requires and not [line for line in requires if "numba" in line.lower()]


def test_the_installed_wheel_opens_a_profile_and_draws_without_compiler_or_node(
        venv, bare_env, tmp_path):
    profile = ROOT / "tests" / "data" / "jax_cpu_demo.xplane.pb"
    script = textwrap.dedent(f"""
        import json, shutil, sys
        from importlib import import_module
        from importlib.resources import files

        import xprof_widgets as xw

        profile = xw.open_profile({str(profile)!r})
        viewer = xw.TraceViewer(profile)
        sent = []
        viewer.send = lambda content, buffers=None: sent.append((content, buffers or []))
        start, end = viewer.window
        viewer._on_custom_message(viewer, {{"kind": "request", "id": 1, "method": "window",
                                            "params": {{"start_us": start, "end_us": end,
                                                        "width_px": 1600}}}}, [])
        kinds = [content.get("kind") for content, _ in sent if content.get("id") == 1]
        print(json.dumps({{
            "package": xw.__file__,
            "native": [import_module("xprof_widgets._native." + name).__file__
                       for name in ("wire", "lod", "search")],
            "bundle": files("xprof_widgets").joinpath("static", "trace_viewer.js").is_file(),
            "events": profile.n_events,
            "answer": kinds,
            "numba": "numba" in sys.modules,
            "tools": [shutil.which(t) for t in ("gcc", "cc", "node", "npm")],
        }}))
    """)
    result = subprocess.run([str(venv / "bin" / "python"), "-c", script], cwd=tmp_path,
                            env=dict(bare_env, PATH=f"{venv / 'bin'}{os.pathsep}"
                                                    f"{bare_env['PATH']}"),
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    site = os.path.realpath(venv)
    assert os.path.realpath(seen["package"]).startswith(site), seen["package"]
    assert all(os.path.realpath(path).startswith(site) and path.endswith((".so", ".pyd"))
               for path in seen["native"]), seen["native"]
    assert seen["bundle"]
    assert seen["events"] > 1000
    assert seen["answer"] and set(seen["answer"]) == {"response"}, seen["answer"]
    assert not seen["numba"]
    assert seen["tools"] == [None, None, None, None]
