"""Drive a real JupyterLab / Notebook 7 (or classic Notebook 6.5, Colab's) in headless Chromium,
as a user would.

A `JupyterServer` runs on a free 127.0.0.1 port with a random token and every Jupyter directory
in a temp dir. `NotebookApp.open_and_run` opens a notebook, waits for its kernel and runs all
cells; `wait_ready` waits for a widget's "drawn" marker and fails fast on stderr output;
`PageWatch` fails the test on console errors, page errors and requests leaving 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
DOC_IMAGES = REPO / "docs" / "images"

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/lib/chromium/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-extensions",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
]
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


@dataclass(frozen=True)
class FrontEnd:
    """What differs between the notebook front ends a test drives: the page's JavaScript API."""

    name: str
    kernel_idle: str
    run_all: str
    stderr: str
    allowed_errors: tuple[str, ...] = ()
    init_script: str = ""
    settle: str = "() => true"


# ipywidgets 7's classic widget manager, once made, asks the kernel for its widgets (the control
# comm, which ipywidgets 7 kernels lack, then comm_info) and afterwards re-renders every cell
# output holding a widget: a widget displayed meanwhile is cleared and comes back hidden. So cells
# run only after that: the control comm has failed and a comm_info sent after the manager's is
# answered (the kernel answers in order; the re-render follows the manager's answer at once).
_CLASSIC_INIT = """(() => {
  const warn = console.warn;
  console.warn = (...args) => {
    if (String(args[0]).includes('"jupyter.widget.control" comm channel')) window.__xwWidgetsAsked = true;
    return warn.apply(console, args);
  };
})();"""
_CLASSIC_IDLE = ("() => window.Jupyter?.notebook?.kernel?.is_connected?.() === true"
                 " && Jupyter.notebook.kernel_busy === false && window.__xwWidgetsAsked === true")
_CLASSIC_SETTLE = """() => new Promise((resolve) =>
  Jupyter.notebook.kernel.comm_info("jupyter.widget", resolve))"""
_LUMINO = {
    "kernel_idle": "() => window.jupyterapp?.shell?.currentWidget?.sessionContext?.session"
                   "?.kernel?.status === 'idle'",
    "run_all": "window.jupyterapp.commands.execute('notebook:run-all-cells')",
    "stderr": '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]',
}
FRONT_ENDS = {
    "lab": FrontEnd("JupyterLab", **_LUMINO),
    # Notebook 7.6 throws this one error of its own on every load, and on a kernel restart
    # sometimes logs that the restart cancelled its debugger's request.
    "notebook": FrontEnd("Notebook 7", **_LUMINO, allowed_errors=(
        "reading 'schema'", "Could not restore the debugger state: Canceled future")),
    # notebook 6.5 (Colab's widget stack; nbclassic's pages): one global `Jupyter`, no cell ids.
    "classic": FrontEnd(
        "Notebook 6.5",
        kernel_idle=_CLASSIC_IDLE,
        run_all="Jupyter.notebook.execute_all_cells()",
        stderr=".output_stderr",
        init_script=_CLASSIC_INIT,
        settle=_CLASSIC_SETTLE,
    ),
}


def find_chromium() -> str | None:
    return next((path for path in CHROMIUM_PATHS if os.access(path, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_notebook(path: Path, cells: list[str]) -> Path:
    """A notebook of code cells, with kernelspec metadata so no kernel dialog blocks the page."""
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": uuid.uuid4().hex[:8],
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for source in cells
        ],
        "metadata": {
            "kernelspec": KERNELSPEC,
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return path


class JupyterServer:
    """`jupyter lab` or `jupyter notebook` on 127.0.0.1, isolated from the user's Jupyter setup.

    `classic` is `jupyter notebook` of notebook 6.5 (the venv running the tests must have it).
    """

    def __init__(self, app: str, base_dir: Path) -> None:
        if app not in FRONT_ENDS:
            raise ValueError(f"app must be one of {', '.join(FRONT_ENDS)}, not {app!r}")
        self.app = app
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.root = base_dir / "root"
        self.log_path = base_dir / "server.log"
        self._base = base_dir
        self._proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        for name, sub in [
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_DATA_DIR", "data"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("JUPYTERLAB_SETTINGS_DIR", "lab-settings"),
            ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"),
            ("IPYTHONDIR", "ipython"),
        ]:
            env[name] = str(self._base / sub)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        # Kernels import test-only widgets (echo_widget) from tests/e2e.
        here = str(Path(__file__).resolve().parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
        log = self.log_path.open("wb")
        self._proc = subprocess.Popen(self._command(), env=env, stdout=log,
                                      stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"jupyter {self.app} exited early:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"jupyter {self.app} not ready in {timeout:.0f} s:\n{self.log_tail()}")

    def _command(self) -> list[str]:
        if self.app == "classic":  # notebook 6.5's own server and options
            return [sys.executable, "-m", "notebook", "--no-browser", "--ip=127.0.0.1",
                    f"--port={self.port}", "--port-retries=0",
                    f"--NotebookApp.token={self.token}", f"--notebook-dir={self.root}",
                    "--allow-root"]
        module, expose = {
            "lab": ("jupyterlab", "--LabApp.expose_app_in_browser=True"),
            "notebook": ("notebook", "--JupyterNotebookApp.expose_app_in_browser=True"),
        }[self.app]
        return [
            sys.executable,
            "-m",
            module,
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.allow_root=True",
            expose,
        ]

    def api(self, method: str, path: str) -> object:
        request = urllib.request.Request(
            self.url + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")

    def stop(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        try:
            self.api("POST", "/api/shutdown")
            self._proc.wait(timeout=20)
        except (urllib.error.URLError, ConnectionError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def notebook_url(self, name: str) -> str:
        if self.app == "lab":  # a fresh workspace, so earlier notebooks do not reopen in tabs
            return (
                f"{self.url}/lab/workspaces/t{uuid.uuid4().hex[:12]}/tree/{name}?token={self.token}"
            )
        return f"{self.url}/notebooks/{name}?token={self.token}"


@dataclass
class PageWatch:
    """What went wrong in the page: console errors, uncaught errors, requests off this machine."""

    allowed: tuple[str, ...] = ()
    errors: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)

    def attach(self, page) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self._error(f"pageerror: {error}"))
        page.on("request", self._request)

    def _console(self, message) -> None:
        if message.type == "error":
            self._error(f"console.error: {message.text}")

    def _error(self, text: str) -> None:
        if not any(pattern in text for pattern in self.allowed):
            self.errors.append(text)

    def _request(self, request) -> None:
        url = request.url
        if not url.startswith(("http://127.0.0.1:", "ws://127.0.0.1:", "blob:", "data:")):
            self.external.append(url)

    def check(self) -> None:
        problems = self.errors + [f"request left 127.0.0.1: {url}" for url in self.external]
        if problems:
            raise AssertionError("the page reported:\n" + "\n".join(problems))


@dataclass
class Timings:
    """Seconds measured in a test, printed at the end of the run."""

    rows: list[tuple[str, str, float]] = field(default_factory=list)

    def add(self, app: str, what: str, seconds: float) -> None:
        self.rows.append((app, what, seconds))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with (ARTIFACTS / "timings.jsonl").open("a") as out:
            out.write(json.dumps({"app": app, "what": what, "seconds": round(seconds, 3)}) + "\n")


class NotebookApp:
    """One server plus the browser: write notebooks, open them, run them."""

    def __init__(self, server: JupyterServer, browser, timings: Timings) -> None:
        self.server = server
        self.browser = browser
        self.timings = timings
        self.watches: list[PageWatch] = []
        self._contexts: list = []

    @property
    def front(self) -> FrontEnd:
        return FRONT_ENDS[self.server.app]

    @property
    def name(self) -> str:
        return self.front.name

    @property
    def key(self) -> str:
        """The app's fixture name (lab, notebook7, classic), as notebook and picture names use it."""
        return {"notebook": "notebook7"}.get(self.server.app, self.server.app)

    def notebook(self, name: str, cells: list[str]) -> Path:
        return write_notebook(self.server.root / name, cells)

    def open_and_run(self, notebook_path: Path, timeout: float = 90.0,
                     init_script: str | None = None):
        """Open the notebook, wait until its kernel is idle, start running all cells;
        `init_script` runs in the page before any of its own scripts (a page without some
        browser feature, say).

        Returns the Playwright page; `wait_ready` then waits for the widget.
        """
        name = notebook_path.relative_to(self.server.root).as_posix()
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        self._contexts.append(context)
        page = context.new_page()
        for script in (self.front.init_script, init_script):
            if script:
                page.add_init_script(script)
        watch = PageWatch(allowed=self.front.allowed_errors)
        watch.attach(page)
        self.watches.append(watch)
        started = time.perf_counter()
        page.goto(self.server.notebook_url(name), timeout=timeout * 1000)
        page.wait_for_function(self.front.kernel_idle, timeout=timeout * 1000)
        page.evaluate(self.front.settle)
        self.timings.add(self.name, "page load to kernel idle", time.perf_counter() - started)
        page.add_style_tag(content=".Toastify { display: none !important; }")  # Lab's news toast
        page.evaluate(
            f"""() => {{
                window.__xwRunAllStart = performance.now();
                window.__xwRunAll = {self.front.run_all};
            }}"""
        )
        return page

    def logdir(self, name: str, host_files: dict[str, Path]) -> str:
        """A logdir `name` in the server's root holding one run of the files ({name in the run:
        the file to copy}); the name, as a notebook there opens it."""
        run = self.server.root / name / "plugins" / "profile" / "2026_11_29_00_00_00"
        run.mkdir(parents=True, exist_ok=True)
        for file_name, source in host_files.items():
            shutil.copyfile(source, run / file_name)
        return name

    def show(self, name: str, cells: list[str], ready: str, width: int | None = None):
        """Writes the notebook `name`, runs it and waits for `ready` (`wait_ready`), the window
        `width` px wide when given; the page."""
        page = self.open_and_run(self.notebook(name, cells))
        if width is not None:
            page.set_viewport_size({"width": width, "height": 900})
        self.wait_ready(page, ready)
        return page

    def wait_ready(self, page, selector: str, timeout: float = 90.0) -> float:
        """Wait for `selector` (a widget's drawn marker); seconds since run-all started.

        Fails at once when a cell writes to stderr (tracebacks included) or the page errors.
        """
        problem = f"{self.front.stderr}, [data-ready='error']"
        page.wait_for_function(
            "([ok, bad]) => document.querySelector(ok) || document.querySelector(bad)",
            arg=[selector, problem],
            timeout=timeout * 1000,
            polling="raf",
        )
        elapsed = page.evaluate("() => (performance.now() - window.__xwRunAllStart) / 1000")
        failures = page.locator(problem)
        if failures.count():
            raise AssertionError(f"the notebook failed:\n{failures.first.inner_text()}")
        for watch in self.watches:
            watch.check()
        self.timings.add(self.name, f"run-all to {selector}", elapsed)
        return elapsed

    def close(self) -> None:
        for context in self._contexts:
            context.close()
        self._contexts.clear()
        self.server.shutdown_kernels()
        watches, self.watches = self.watches, []
        for watch in watches:
            watch.check()


def screenshot(locator, name: str) -> Path:
    """Screenshot one element into tests/e2e/artifacts/ (and docs/images/ when asked to)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    locator.screenshot(path=str(path))
    if os.environ.get("XPROF_WIDGETS_UPDATE_DOCS") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOC_IMAGES / path.name)
    return path


def picture(page, locator, name: str, width: int = 1280, settle_ms: int = 600) -> Path:
    """Screenshot a whole widget: the window made tall enough that the notebook does not scroll
    it, then `settle_ms` for Bokeh to redraw at the new size."""
    height = locator.evaluate("(el) => el.getBoundingClientRect().height")
    page.set_viewport_size({"width": width, "height": int(height) + 400})
    locator.scroll_into_view_if_needed()
    page.wait_for_timeout(settle_ms)
    return screenshot(locator, name)


RUN_IN_KERNEL = """async (code) => {
  if (!window.jupyterapp) {  // classic Notebook 6.5
    return await new Promise((resolve) => {
      let out = "";
      Jupyter.notebook.kernel.execute(code, {iopub: {
        output: (msg) => {
          if (msg.header.msg_type === "stream") out += msg.content.text;
          if (msg.header.msg_type === "error") out += `${msg.content.ename}: ${msg.content.evalue}`;
        },
        status: (msg) => { if (msg.content.execution_state === "idle") resolve(out); },
      }}, {silent: false, store_history: false});
    });
  }
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let out = "";
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === "stream") out += msg.content.text;
    if (msg.header.msg_type === "error") out += `${msg.content.ename}: ${msg.content.evalue}`;
  };
  await future.done;
  return out;
}"""


def run_in_kernel(page, code: str) -> str:
    """Runs code in the open notebook's kernel (as the widget's own kernel sees it); its output."""
    return page.evaluate(RUN_IN_KERNEL, code)
