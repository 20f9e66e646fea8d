"""xw.compare: the widget's report, its two linked Trace Viewers, and `%xprof diff`."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from test_trace_viewer_widget import ask
from traitlets.config import Config

import xprof_widgets as xw
from xprof_widgets.analysis.compare_rows import match_rows, stem
from xprof_widgets.widgets.compare import Compare
from xprof_widgets.widgets.trace_viewer import summarize

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
    assert len(cmp.steps()) == 4 and "Waiting for input" in set(cmp.step_breakdown()["part"])
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
    assert report["steps"]["aligned"] == 4  # 6 found, XProf's rule counts 4
    assert report["steps"]["chart"]["doc"]  # a Bokeh JSON item
    assert report["steps"]["rows"]["status"] == ["faster"] * 4
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
    from bokeh_doc import models as doc_models

    report, _ = ask(cmp.view, "report")
    known = Model.model_class_reverse_map
    models = doc_models(report["steps"]["chart"]["doc"])
    assert {"VBar", "HoverTool", "Legend"} <= {m["name"] for m in models}
    for m in models:
        assert not set(m["attributes"]) - set(known[m["name"]].properties()), m["name"]


def drawn_rows(viewer) -> list[tuple]:
    """What a timeline lists top to bottom, as layout.js reads the summary: each track's
    section, kind and height (its max depth)."""
    t = viewer._summary["tracks"]
    return list(zip(t["section"], t["kind"], t["max_depth"], strict=True))


def test_both_timelines_list_the_same_rows_in_the_same_order(cmp):
    rows = cmp.rows()
    assert drawn_rows(cmp.before) == drawn_rows(cmp.after) and len(rows) == 5
    for side, viewer in (("before", cmp.before), ("after", cmp.after)):
        ids = viewer._summary["tracks"]["id"]
        real = [i for i in ids if i >= 0]  # every drawn track of the run once, none invented
        assert sorted(real) == sorted(summarize(viewer.profile)["tracks"]["id"])
        assert [i for i in ids if i < 0] == [i for i, t in zip(ids, rows[f"track_{side}"],
                                                               strict=True) if t < 0]
    names = {side: viewer._summary["tracks"]["name"] for side, viewer in
             (("before", cmp.before), ("after", cmp.after))}
    # The Eigen threads pair by their name's stem, busiest first; python by its name; the fast
    # run's second PjRt client thread is an empty row in before, named so.
    assert [n.split("/")[0] for n in names["before"]] == [n.split("/")[0] for n in names["after"]]
    assert names["before"][:2] == ["tf_XLAEigen/-9019038718237517716", "tf_XLAEigen/2111072946349704860"]
    assert names["after"][:2] == ["tf_XLAEigen/-4085716090227782279", "tf_XLAEigen/2708611526303757588"]
    assert rows["matched_by"].tolist() == ["stem", "stem", "name", "stem", "after only"]
    assert names["before"][4] == "tf_XLAPjRtCpuClient/4471485703699184993 · only in after"


def test_an_empty_row_asks_for_nothing_and_answers_no_events(cmp):
    ids = cmp.before._summary["tracks"]["id"]
    content, _ = ask(cmp.before, "window", start_us=0, end_us=1e5, width_px=800, tracks=ids,
                     collapsed=[-7])
    assert [t[0] for t in content["tracks"]] == sorted(i for i in ids if i >= 0)
    box, _ = ask(cmp.before, "select_box", start_us=0, end_us=1e9,
                 rows=[[i, 0, 9] for i in ids])
    assert len(box["events"]) == sum(cmp.before._summary["tracks"]["n_events"])


@pytest.mark.parametrize(("before", "after"), [
    ("tf_keras_cpu_slow_map.xplane.pb", "tf_keras_cpu_fast.xplane.pb"),
    ("synthetic_tpu.xplane.pb", "tpu_v6e_inference.xplane.pb"),
    ("compare/batch_small.xplane.pb", "compare/batch_large.xplane.pb"),
])
def test_rows_match_by_name_first_then_stem_on_real_pairs(before, after):
    b, a = (xw.open_profile(PAIRS.parent / name) for name in (before, after))
    rows = match_rows(b, a)
    for side, profile in (("before", b), ("after", a)):
        tracks = rows[f"track_{side}"]
        assert sorted(tracks[tracks >= 0]) == sorted(summarize(profile)["tracks"]["id"])
    named = rows[rows["matched_by"] == "name"]
    assert (named["name_before"] == named["name_after"]).all() and len(named)
    stems = rows[rows["matched_by"] == "stem"]
    assert (stems["name_before"].map(stem) == stems["name_after"].map(stem)).all()
    assert not (stems["name_before"] == stems["name_after"]).any()
    # A row of one side only is empty on the other, and no row of the other side only in its
    # section has its kind and stem (it would have paired).
    groups = {}
    for side, other in (("before", "after"), ("after", "before")):
        alone = rows[rows["matched_by"] == f"{side} only"]
        assert (alone[f"track_{other}"] == -1).all() and (alone[f"name_{other}"] == "").all()
        groups[side] = set(zip(alone["section"], alone["kind"], alone[f"name_{side}"].map(stem),
                               strict=True))
    assert not groups["before"] & groups["after"]


def test_the_keras_pair_keeps_threads_of_one_id_on_one_row():
    rows = match_rows(*(xw.open_profile(PAIRS.parent / n) for n in
                        ("tf_keras_cpu_slow_map.xplane.pb", "tf_keras_cpu_fast.xplane.pb")))
    by_name = rows.set_index("name_before")
    assert by_name.loc["tf_Compute/2419017410424709277", "name_after"] == \
        "tf_Compute/2419017410424709277"
    assert by_name.loc["python", "matched_by"] == "name"
    assert (rows["matched_by"] == "before only").sum() == 1  # slow_map has one more iterator thread


def test_a_device_only_in_one_run_is_an_empty_section_on_the_other():
    cmp = Compare(xw.open_profile(PAIRS.parent / "jax_cpu_demo.xplane.pb"),
                  xw.open_profile(PAIRS.parent / "synthetic_tpu.xplane.pb"))
    rows = cmp.rows()
    sections = cmp.before._summary["sections"]
    tpu = [(i, n) for i, n in zip(sections["id"], sections["name"], strict=True) if "TPU" in n]
    assert len(tpu) == 4 and all(i < 0 and n.endswith(" · only in after") for i, n in tpu)
    assert drawn_rows(cmp.before) == drawn_rows(cmp.after)
    assert set(rows.loc[rows["section_before"] == -1, "matched_by"]) == {"after only"}


def test_two_ranks_gpus_pair_across_their_numbers():
    """HTA's trace-diff pair: rank 3 against rank 1. 'GPU 3' pairs with 'GPU 1' (their names'
    stem), the default stream 7 by name, the others by stem, busiest (top-level time) with
    busiest."""
    hta = PAIRS.parent / "public" / "hta" / "trace_diff"
    rows = match_rows(xw.open_profile(hta / "control"), xw.open_profile(hta / "test"))
    gpu = rows[rows["section"] == "python3.8 (3) GPU 3"]
    assert (gpu["section_before"] >= 0).all() and (gpu["section_after"] >= 0).all()
    assert gpu[["name_before", "name_after", "matched_by"]].values.tolist()[0] == [
        "stream 7", "stream 7", "name"]
    assert set(gpu["matched_by"]) == {"name", "stem"} and len(gpu) == 4
    assert not rows["matched_by"].str.endswith("only").any()
    # Each run's main thread (its ProfilerSteps span the run) beside the other's, though a worker
    # thread of before has more events than it.
    main = rows.set_index("name_before").loc["thread 3113936 (python3.8)"]
    assert main["name_after"] == "thread 2568503 (python3.8)"
