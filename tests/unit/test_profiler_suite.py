"""The suite: one decoded profile shared by lazily made tabs, pickers, links between tools."""

from __future__ import annotations

import re
import threading
import time

import pytest

import xprof_widgets as xw


@pytest.fixture
def logdir(make_logdir, tpu_path):
    data = tpu_path.parent
    return make_logdir({
        "2026_11_28_00_00_00": {"cpu.xplane.pb": data / "jax_cpu_demo.xplane.pb"},
        "2026_11_29_00_00_00": {"a.xplane.pb": data / "synthetic_tpu.xplane.pb",
                                "b.xplane.pb": data / "synthetic_tpu.xplane.pb"},
    })


def test_tabs_share_one_profile_and_are_made_when_shown(logdir):
    suite = xw.Profiler(logdir)
    titles = tuple(suite.tabs.get_title(i) for i in range(len(suite.tabs.children)))
    assert titles == ("Overview", "Trace Viewer", "Op Profile", "Memory Viewer", "Graph Viewer",
                      "Input Pipeline", "Framework Op Stats", "HLO Stats", "Roofline Model",
                      "Pod Viewer")
    assert set(suite._tools) == {"overview"}
    suite.tabs.selected_index = 1
    assert set(suite._tools) == {"overview", "trace"}
    assert suite.tool("trace").profile is suite.profile is suite.tool("overview").profile


def test_a_tab_asked_for_from_two_threads_is_made_once(logdir, monkeypatch):
    # ipykernel 7 runs JupyterLab's widget messages on a subshell thread, beside the cell's.
    from xprof_widgets.widgets.trace_viewer import TraceViewer
    made = TraceViewer.__init__

    def slow(self, *args, **kwargs):
        time.sleep(0.2)
        made(self, *args, **kwargs)

    monkeypatch.setattr(TraceViewer, "__init__", slow)
    suite = xw.Profiler(logdir)
    got = []
    threads = [threading.Thread(target=lambda: got.append(suite.tool("trace"))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got[0] is got[1] is suite.tabs.children[suite.tab_keys.index("trace")]


def test_run_and_host_pickers_reopen(logdir):
    suite = xw.Profiler(logdir)
    assert suite.profile.hosts == ["a", "b"]
    suite.host_picker.value = "b"
    assert suite.profile.hosts == ["b"]
    suite.run_picker.value = "2026_11_28_00_00_00"
    assert suite.profile.hosts == ["cpu"]
    assert suite.host_picker is None  # one host in that run
    assert suite.children[0].children == (suite.run_picker,)


def test_an_op_link_moves_the_trace_viewer_to_it(logdir):
    suite = xw.Profiler(logdir, host="a", tool="op")
    op_name = suite.tool("op").to_dataframe()["name"].iat[0]
    suite.show_in_trace(op_name)
    viewer = suite.tool("trace")
    assert suite.tabs.selected_index == 1
    start, end = viewer.window
    first = viewer.search(op_name)["start_us"].min()
    assert start <= first <= end
    assert viewer.selected_events


def test_an_unknown_tool_is_refused(logdir):
    with pytest.raises(ValueError, match="tool='no_such_tool'"):
        xw.Profiler(logdir, tool="no_such_tool")


def test_views_ask_the_suite_for_links(logdir):
    suite = xw.Profiler(logdir, host="a", tool="trace")
    viewer = suite.tool("trace")
    assert viewer._linked and not xw.TraceViewer(suite.profile)._linked
    op_name = suite.tool("op").to_dataframe()["name"].iat[0]
    viewer.link = {"tool": "op", "op": op_name, "at": 1}
    assert suite.tabs.selected_index == 2
    assert suite.tool("op").name_filter == f"^{re.escape(op_name)}$"
    suite.tool("op").link = {"tool": "trace", "op": op_name, "at": 2}
    assert suite.tabs.selected_index == 1 and viewer.selected_events


def test_a_single_file_needs_no_pickers(tpu_path):
    suite = xw.Profiler(tpu_path)
    assert suite.run_picker is None and suite.host_picker is None
    assert suite.children == (suite.tabs,)


def test_the_suite_analyses_the_profile_once(logdir, monkeypatch):
    from xprof_widgets.analysis import op_profile

    calls = []
    real = op_profile._analyze
    monkeypatch.setattr(op_profile, "_analyze", lambda *a: calls.append(a) or real(*a))
    suite = xw.Profiler(logdir, host="a")  # the Overview reads the op profile
    assert suite.tool("overview").data.top_ops.shape[0] > 0
    suite.tool("op")
    assert len(calls) == 1
    assert suite.tool("trace").index is suite.tool("trace").index  # one trace index too
