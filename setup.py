"""Build steps pyproject.toml cannot declare: the compiled kernels and the JS bundles.

- xprof_widgets/_native/*.pyx are compiled by Cython into extension modules, ahead of time, so a
  fresh runtime (Colab, CI, a new venv) compiles nothing at first use.
- js/ is bundled by esbuild (npm) into xprof_widgets/static/ before the Python files are
  collected, for `pip install .`, `pip install -e .` and `pip wheel .` alike, so nobody runs npm
  by hand. With XPROF_WIDGETS_SKIP_JS=1 and every bundle already built, npm is not run at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent.resolve()
NATIVE = "xprof_widgets/_native"


class BuildPyWithJs(build_py):
    """build_py that bundles js/ into xprof_widgets/static/ first (package data of the wheel)."""

    def run(self) -> None:
        build_js(ROOT)
        self.__dict__.pop("data_files", None)  # glob package data again: the bundles now exist
        super().run()


class ParallelBuildExt(build_ext):
    """build_ext compiling the kernels on every core (one C file per kernel module)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


def build_js(root: Path) -> None:
    js_dir = root / "js"
    static_dir = root / "xprof_widgets" / "static"
    expected = [static_dir / entry.name for entry in sorted((js_dir / "src").glob("*.js"))]
    skip = os.environ.get("XPROF_WIDGETS_SKIP_JS") == "1"
    if not (skip and all(path.is_file() for path in expected)):
        _install_node_modules(js_dir)
        _run([_tool("node"), "build.mjs"], js_dir)
    for path in expected:
        if not path.is_file():
            raise RuntimeError(f"the JS build did not write {path}")


def _install_node_modules(js_dir: Path) -> None:
    lock = js_dir / "package-lock.json"
    installed = js_dir / "node_modules" / ".package-lock.json"
    if lock.is_file() and installed.is_file() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return  # node_modules already matches the lock
    npm = _tool("npm")
    _run([npm, "ci"] if lock.is_file() else [npm, "install"], js_dir)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"building xprof_widgets needs `{name}` (Node.js 18+ with npm) on PATH to bundle its "
            "JavaScript; install Node.js, or set XPROF_WIDGETS_SKIP_JS=1 when "
            "xprof_widgets/static/ is already built"
        )
    return path


def _run(command: list[str], cwd: Path) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"`{' '.join(command)}` in {cwd} failed (exit {result.returncode}):\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )


def _extensions() -> list[Extension]:
    # -fwrapv: signed integer overflow wraps (as numpy's int64 does), never undefined behaviour.
    flags = [] if os.name == "nt" else ["-O3", "-fwrapv"]
    modules = sorted(path.stem for path in (ROOT / NATIVE).glob("*.pyx"))
    return [Extension(f"xprof_widgets._native.{name}", [f"{NATIVE}/{name}.pyx"],
                      extra_compile_args=flags) for name in modules]


setup(
    ext_modules=cythonize(_extensions(), build_dir="build/cython",
                          compiler_directives={"language_level": 3}),
    cmdclass={"build_py": BuildPyWithJs, "build_ext": ParallelBuildExt},
)
