"""xw.compare: the widget's report, its two linked Trace Viewers, and `%xprof diff`."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from test_trace_viewer_widget import ask
from traitlets.config import Config

import xprof_widgets as xw
from xprof_widgets.widgets.compare import Compare

PAIRS = Path(__file__).resolve().parents[1] / "data" / "compare"
SLOW, FAST = PAIRS / "loader_slow.xplane.pb", PAIRS / "loader_fast.xplane.pb"


@pytest.fixture(scope="module")
def cmp() -> Compare:
    return xw.compare(SLOW, FAST)


def test_the_widget_is_the_report_over_two_trace_viewers(cmp):
    assert isinstance(cmp, Compare)
    assert cmp.children[0] is cmp.view
    assert cmp.before.profile.source == str(SLOW) and cmp.after.profile.source == str(FAST)
    assert cmp.view.title == {"before": str(SLOW), "after": str(FAST)}
    assert cmp.summary().startswith("Step time 3")
    assert len(cmp.steps()) == 6 and "input wait" in set(cmp.step_breakdown()["part"])
    assert len(cmp.ops()) == len(cmp.comparison.ops())
    assert set(cmp.memory()["module"]) >= {"jit_step"}
    # The timelines open on the step whose time changed most (a stalled step), not on step 0.
    most = cmp.comparison.most_changed_step()
    assert most != 0 and cmp.view.step == most
    b0, _ = cmp.comparison.step_span_us(most, "before")
    assert cmp.before.window[0] < b0 < cmp.before.window[1]


def test_the_report_has_every_section(cmp):
    report, _ = ask(cmp.view, "report")
    assert report["summary"] == cmp.summary()
    assert report["steps"]["aligned"] == 6
    assert report["steps"]["chart"]["doc"]  # a Bokeh JSON item
    assert report["steps"]["rows"]["status"] == ["faster"] * 6
    assert report["ops"]["rows"]["name"] == cmp.ops()["name"].tolist()
    assert report["memory"]["module"] == "jit_step"
    assert report["memory"]["memory_space"] == "RAM"  # a CPU's, named as a CPU names it
    assert report["steps"]["most_changed"] == cmp.comparison.most_changed_step()
    assert report["k"] == 3 and report["ops"]["rows"]["change_se"]
    assert report["memory"]["buffers"]["rows"]["status"]
    by_program, _ = ask(cmp.view, "ops", by="program")
    assert by_program["by"] == "program" and by_program["rows"]["name"] == ["jit_step"]


def test_a_run_without_steps_reports_why_in_its_section():
    report, _ = ask(xw.compare(SLOW, PAIRS.parent / "tpu_v6e_inference.xplane.pb").view, "report")
    assert "has no steps" in report["steps"]["error"]
    assert report["ops"]["rows"]["status"]  # the ops still compare
    assert "has no steps" in report["summary"]


def test_the_traces_start_at_the_chosen_step_and_move_together(cmp):
    for step in (0, 3):
        cmp.view.step = step  # as the view's step picker sets it
        b0, _ = cmp.comparison.step_span_us(step, "before")
        a0, _ = cmp.comparison.step_span_us(step, "after")
        before, after = cmp.before.window, cmp.after.window
        assert before[0] < b0 < before[1] and after[0] < a0 < after[1]
        # step k starts at the same x: the same distance from each window's start
        assert b0 - before[0] == pytest.approx(a0 - after[0])
        assert before[1] - before[0] == pytest.approx(after[1] - after[0])
        assert f"step {step}" in cmp.trace_label.value
    offset = cmp.comparison.step_offset_us(3)
    cmp.before.window = (1000.0, 3000.0)  # a pan or zoom in one view
    assert cmp.after.window == pytest.approx((1000.0 + offset, 3000.0 + offset))
    cmp.after.window = (5000.0 + offset, 5500.0 + offset)
    assert cmp.before.window == pytest.approx((5000.0, 5500.0))
    cmp.align(1)
    assert cmp.view.step == 1


def test_without_steps_the_traces_say_they_are_not_aligned():
    other = xw.compare(SLOW, PAIRS.parent / "tpu_v6e_inference.xplane.pb")
    assert "not aligned" in other.trace_label.value and "has no steps" in other.trace_label.value


def test_the_same_profile_twice_compares_to_unchanged():
    profile = xw.open_profile(FAST)
    same = xw.compare(profile, profile)
    assert set(same.ops()["status"]) == {"unchanged"}
    assert same.before.profile is same.after.profile


@pytest.fixture
def shell():
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "xprof_widgets")
    yield ip
    ip.run_line_magic("unload_ext", "xprof_widgets")


def test_xprof_diff_shows_the_comparison(shell, monkeypatch, make_logdir):
    shown: list = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    logdir = make_logdir({"2026_01_01_00_00_00": {"h.xplane.pb": SLOW},
                          "2026_01_02_00_00_00": {"h.xplane.pb": FAST}})
    shell.run_line_magic("xprof", f"diff {SLOW} {FAST}")
    assert isinstance(shown[-1], Compare) and shown[-1].after.profile.source == str(FAST)
    shell.run_line_magic("xprof", f"diff {logdir} {logdir} --run-before 2026_01_01_00_00_00")
    assert shown[-1].comparison.before.profile.run == "2026_01_01_00_00_00"
    assert shown[-1].comparison.after.profile.run == "2026_01_02_00_00_00"


def test_xprof_diff_without_two_profiles_prints_the_usage(shell, monkeypatch, capsys):
    shown: list = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    shell.run_line_magic("xprof", f"diff {SLOW}")
    out = capsys.readouterr().out
    assert "the following arguments are required: after" in out and "%xprof diff" in out
    shell.run_line_magic("xprof", f"diff {SLOW} /no/such/place")
    assert "/no/such/place" in capsys.readouterr().out
    assert not shown


def test_the_step_chart_is_a_valid_bokeh_document(cmp):
    import bokeh.models  # registers every model class
    import bokeh.plotting  # noqa: F401  (and Figure)
    from bokeh.model import Model
    from test_charts import _models

    report, _ = ask(cmp.view, "report")
    known = Model.model_class_reverse_map
    models = _models(report["steps"]["chart"]["doc"], [])
    assert {"VBar", "HoverTool", "Legend"} <= {m["name"] for m in models}
    for m in models:
        assert not set(m["attributes"]) - set(known[m["name"]].properties()), m["name"]
