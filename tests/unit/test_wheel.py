"""The wheel `pip wheel .` builds installs and runs where no compiler and no Node.js exist.

The wheel is built once per state of the sources and kept under the user's cache dir
(tests/wheel_cache.py, which `make test-colab` shares). It is installed into a new, empty venv
whose PATH holds nothing but that venv (CC=/bin/false), and the venv opens a real profile and
draws the Trace Viewer's first window. XPROF_WIDGETS_SKIP_WHEEL_TEST=1 skips the module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import wheel_cache  # tests/ is on sys.path (its conftest.py; pytest's prepend import mode)

ROOT = wheel_cache.ROOT

pytestmark = [
    pytest.mark.wheel,
    pytest.mark.skipif(os.environ.get("XPROF_WIDGETS_SKIP_WHEEL_TEST") == "1",
                       reason="XPROF_WIDGETS_SKIP_WHEEL_TEST=1"),
]


@pytest.fixture(scope="session")
def wheel() -> Path:
    return wheel_cache.wheel()


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
