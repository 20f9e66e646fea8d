"""Build hook: bundle the widget front ends (js/) into xprof_widgets/static/ for every wheel.

Runs for `pip install .`, `pip wheel .` and editable installs alike, so nobody runs npm by hand.
With XPROF_WIDGETS_SKIP_JS=1 and every bundle already built, npm is not run at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class JsBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
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
            # static/ is git-ignored (built, not committed): a regular wheel names each bundle
            # explicitly; an editable one imports from this tree, where the bundles now are.
            if version == "standard":
                build_data["force_include"][str(path)] = f"xprof_widgets/static/{path.name}"


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
