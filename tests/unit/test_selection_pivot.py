"""The selection pivot (trace/pivot.py) and TraceViewer's `selection_pivot()` / `show(frame)`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.trace import trace_index
from xprof_widgets.trace.details import self_time_ps
from xprof_widgets.trace.pivot import selection_pivot, self_times_ps
from xprof_widgets.widgets.trace_viewer import MAX_BOX_EVENTS, TraceViewer

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def demo() -> xw.Profile:
    return xw.open_profile(DATA / "jax_cpu_demo.xplane.pb")


@pytest.mark.parametrize("fixture", ["jax_cpu_demo.xplane.pb", "synthetic_tpu.xplane.pb",
                                     "torch_tiny_mlp.pt.trace.json.gz"])
def test_self_times_equal_the_details_panels(fixture):
    profile = xw.open_profile(DATA / fixture)
    index = trace_index(profile)
    events = np.random.default_rng(0).choice(profile.n_events, 400, replace=False)
    expected = [self_time_ps(index, int(e)) for e in events]
    assert self_times_ps(profile, events).tolist() == expected


def test_the_pivot_groups_by_section_track_and_name(demo):
    step = demo.events(name="^train 3$").iloc[0]
    events = demo.event_indices(step["start_us"], step["start_us"] + step["duration_us"])
    table = selection_pivot(demo, events)
    assert list(table.columns) == ["section", "track", "track_name", "name", "count",
                                   "total_us", "self_us", "avg_us"]
    assert table["count"].sum() == len(np.unique(events))
    frame = demo.events_frame(np.unique(events))
    assert table["total_us"].sum() == pytest.approx(frame["duration_us"].sum())
    assert table["total_us"].is_monotonic_decreasing
    assert (table["self_us"] <= table["total_us"] + 1e-9).all()
    assert table["avg_us"].tolist() == pytest.approx((table["total_us"] / table["count"]).tolist())
    # The step holds its input pipeline: its self time is what the annotations inside leave.
    row = table[table["name"] == "train 3"].iloc[0]
    assert row["self_us"] < 0.5 * row["total_us"]
    by_name = selection_pivot(demo, events, by=["name"])
    assert list(by_name.columns) == ["name", "count", "total_us", "self_us", "avg_us"]
    assert by_name.set_index("name")["count"].to_dict() == frame.groupby("name").size().to_dict()
    with pytest.raises(ValueError, match="by: one or more of section, track, name"):
        selection_pivot(demo, events, by=["thread"])


def test_the_viewer_answers_the_pivot_request_and_its_python_face(demo):
    from test_trace_viewer_widget import ask

    tv = TraceViewer(demo)
    events = demo.events(name="^load_batch$")["event"].tolist()
    content, _ = ask(tv, "pivot", events=events)
    rows = pd.DataFrame(content["rows"])
    assert rows["name"].tolist() == ["load_batch"] and rows["count"].tolist() == [len(events)]
    assert content["start_us"] == pytest.approx(demo.events_frame(events)["start_us"].min())
    tv.selected_events = events
    assert tv.selection_pivot().equals(selection_pivot(demo, np.array(events)))
    assert list(tv.selection_pivot(by=("track",)).columns)[:2] == ["track", "track_name"]


def test_show_selects_a_frames_events_and_moves_the_view_to_them(demo):
    tv = TraceViewer(demo)
    hits = demo.sql("SELECT id, name FROM slice WHERE name = 'preprocess_batch'")
    tv.show(hits)
    assert sorted(tv.selected_events) == sorted(hits["id"].tolist())
    frame = demo.events_frame(hits["id"].to_numpy())
    start, end = tv.window
    assert start <= frame["start_us"].min() and end >= (frame["start_us"]
                                                          + frame["duration_us"]).max()
    tv.show(tv.search("^load_batch$", regex=True))  # an `event` column
    assert set(tv.selection["name"]) == {"load_batch"}
    tv.show(pd.DataFrame({"slice_id": [3, 3, 5]}))
    assert tv.selected_events == [3, 5]
    tv.show(pd.DataFrame({"mine": [7]}), column="mine")
    assert tv.selected_events == [7]
    tv.show(hits.iloc[:0])
    assert tv.selected_events == []


def test_show_says_what_it_needs(demo):
    tv = TraceViewer(demo)
    with pytest.raises(KeyError, match="no event column in the frame.*event, id, slice_id"):
        tv.show(pd.DataFrame({"name": ["x"]}))
    with pytest.raises(KeyError, match="event ids must be in"):
        tv.show(pd.DataFrame({"event": [demo.n_events]}))


def test_show_caps_the_selection(demo, monkeypatch):
    import xprof_widgets.widgets.trace_viewer as module

    monkeypatch.setattr(module, "MAX_BOX_EVENTS", 10)
    tv = TraceViewer(demo)
    tv.show(pd.DataFrame({"event": np.arange(100)}))
    assert tv.selected_events == list(range(10))
    assert MAX_BOX_EVENTS > 10
