"""Fixtures for the browser tests: servers, Chromium, and the test-only echo widget's bundle.

`lab`, `notebook7` and `classic` (Notebook 6.5) are `harness.NotebookApp`s. E2e tests are skipped
only when Chromium is missing outside CI and `make test`; there (CI or
XPROF_WIDGETS_REQUIRE_REFERENCES set) a missing Chromium fails them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import harness  # tests/e2e is on sys.path (pytest's default prepend import mode)
import pytest

E2E_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    if harness.find_chromium() or os.environ.get("CI") or os.environ.get(
            "XPROF_WIDGETS_REQUIRE_REFERENCES") == "1":
        return
    skip = pytest.mark.skip(reason=f"no Chromium at {' or '.join(harness.CHROMIUM_PATHS)}")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def timings(request):
    timings = harness.Timings()
    request.config._xw_timings = timings.rows  # printed by pytest_terminal_summary
    return timings


@pytest.fixture(scope="session", autouse=True)
def widget_bundles() -> Path:
    """Every widget's bundle, rebuilt into xprof_widgets/static/ (where `_esm` reads it), so the
    browser tests run the JavaScript as it is in js/src even without a reinstall."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("the e2e tests need Node.js to bundle the widgets")
    static = harness.REPO / "xprof_widgets" / "static"
    # Under pytest-xdist every worker runs this: the first builds, the others wait for it and
    # reuse its bundles (a second build would rewrite files another worker's page is loading).
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    static.mkdir(exist_ok=True)
    with open(static / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = static / f".built-{run}"
        if run is None or not stamp.exists():
            subprocess.run([node, "build.mjs"], cwd=harness.REPO / "js", check=True,
                           capture_output=True)
            for old in static.glob(".built-*"):
                old.unlink()
            if run is not None:
                stamp.touch()
    return static


@pytest.fixture(scope="session")
def echo_bundle() -> Path:
    """Bundle tests/e2e/echo_widget.js (it imports the real transport and Bokeh loader)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("the e2e tests need Node.js to bundle the echo widget")
    out = harness.ARTIFACTS / "echo_widget.js"
    subprocess.run(
        [node, "build.mjs", f"{E2E_DIR / 'echo_widget.js'}={out}"],
        cwd=harness.REPO / "js",
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="session")
def browser():
    chromium = harness.find_chromium()
    if chromium is None:
        pytest.fail(
            f"CI is set and no Chromium is at {' or '.join(harness.CHROMIUM_PATHS)} "
            "(apt-get install -y chromium)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=harness.CHROMIUM_ARGS
        )
        yield browser
        browser.close()


def _server(app: str, tmp_path_factory):
    server = harness.JupyterServer(app, tmp_path_factory.mktemp(f"jupyter-{app}"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    yield from _server("lab", tmp_path_factory)


@pytest.fixture(scope="session")
def notebook_server(tmp_path_factory):
    yield from _server("notebook", tmp_path_factory)


@pytest.fixture(scope="session")
def classic_server(tmp_path_factory):
    yield from _server("classic", tmp_path_factory)


@pytest.fixture
def lab(lab_server, browser, timings):
    app = harness.NotebookApp(lab_server, browser, timings)
    yield app
    app.close()


@pytest.fixture
def notebook7(notebook_server, browser, timings):
    app = harness.NotebookApp(notebook_server, browser, timings)
    yield app
    app.close()


@pytest.fixture(params=["lab", "notebook7"])
def app(request):
    """The test once in JupyterLab and once in Notebook 7 (`app.key` says which)."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def classic(classic_server, browser, timings):
    """The classic Notebook 6.5 (Colab's widget stack; test_e2e_colab_classic.py)."""
    app = harness.NotebookApp(classic_server, browser, timings)
    yield app
    app.close()


def pytest_terminal_summary(terminalreporter):
    rows = getattr(terminalreporter.config, "_xw_timings", None)
    if rows:
        terminalreporter.section("browser timings")
        for app, what, seconds in rows:
            shown = f"{seconds:6.2f} s" if seconds >= 0.1 else f"{seconds * 1000:6.1f} ms"
            terminalreporter.write_line(f"{app:12} {what:40} {shown}")
