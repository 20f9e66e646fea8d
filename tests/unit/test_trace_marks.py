"""Pinned and hidden tracks and bookmarks of the Trace Viewer: what the view is sent, the pandas
face, and that they are kept per profile while it lives (trace/marks.py)."""

from __future__ import annotations

import gc
import shutil

import pytest
import traitlets

import xprof_widgets as xw
from xprof_widgets.trace import marks as marks_module
from xprof_widgets.trace.marks import MAX_BOOKMARKS, TraceMarks, free_name
from xprof_widgets.widgets.trace_viewer import TraceViewer

GPU = "tests/data/synthetic_gpu.xplane.pb"


@pytest.fixture
def gpu(tmp_path):
    """A private copy of the GPU fixture: its marks start empty and go with it."""
    path = tmp_path / "gpu.xplane.pb"
    shutil.copy(GPU, path)
    return path


def test_pins_come_first_in_pin_order_and_hiding_unpins():
    marks = TraceMarks().pin([5, 2]).pin([2, 7]).hide([9])
    assert marks.pinned == (5, 2, 7) and marks.hidden == (9,)
    marks = marks.hide([2]).pin([9])
    assert marks.pinned == (5, 7, 9) and marks.hidden == (2,)
    assert marks.unpin([5]).pinned == (7, 9) and marks.unpin().pinned == ()
    assert marks.unhide().hidden == ()


def test_bookmarks_are_named_sorted_replaced_and_bounded():
    marks = TraceMarks().bookmark(None, 50.0).bookmark("step", 10.0, 20.0).bookmark(None, 5.0)
    assert marks.names() == ["bookmark 2", "step", "bookmark 1"]  # by time
    marks = marks.bookmark("step", 60.0, 70.0)  # a name used again moves its bookmark
    assert marks.frame().to_dict("records")[-1] == {"name": "step", "start_us": 60.0,
                                                     "end_us": 70.0}
    assert free_name(["bookmark 1", "bookmark 3"]) == "bookmark 2"
    with pytest.raises(ValueError, match="start <= end"):
        marks.bookmark("x", 5.0, 1.0)
    with pytest.raises(KeyError, match="'step'"):
        marks.find("nope")
    full = TraceMarks(bookmarks=tuple((f"b{i}", float(i), float(i)) for i in range(MAX_BOOKMARKS)))
    with pytest.raises(ValueError, match="at most"):
        full.bookmark("one more", 1.0)
    assert len(full.bookmark("b3", 1.0).bookmarks) == MAX_BOOKMARKS  # a move is not one more


def test_what_the_view_receives(gpu):
    tv = TraceViewer(xw.open_profile(gpu))
    tracks = tv._summary["tracks"]
    nccl3 = tracks["id"][tracks["section"].index("/device:GPU:3") + 4]
    assert tracks["name"][tracks["id"].index(nccl3)] == "Stream #15(Nccl)"
    tv.pin(nccl3)
    tv.pin("/device:GPU:0/Stream #12(Compute)")
    tv.hide("Stream #13(MemcpyH2D)")  # a name: that track on every GPU
    state = tv.get_state()
    assert state["pinned_tracks"] == [nccl3, 0]  # pin order: the view draws them so
    assert len(state["hidden_tracks"]) == 4
    assert state["_summary"] == tv._summary  # the summary keeps the profile's order
    tv.bookmark("warmup", (100.0, 250.0))
    name = tv.bookmark(at=40.0)
    assert name == "bookmark 1"
    assert tv.get_state()["_bookmarks"] == [
        {"name": "bookmark 1", "start_us": 40.0, "end_us": 40.0},
        {"name": "warmup", "start_us": 100.0, "end_us": 250.0}]
    assert list(tv.bookmarks.columns) == ["name", "start_us", "end_us"]
    tv.unhide()
    tv.unpin(0)
    assert (tv.pinned_tracks, tv.hidden_tracks) == ([nccl3], [])


def test_goto_centres_a_time_and_fills_the_view_with_a_span(gpu):
    tv = TraceViewer(xw.open_profile(gpu))
    tv.window = (0.0, 100.0)
    tv.bookmark("t", 500.0)
    tv.bookmark("span", (1000.0, 3000.0))
    tv.goto("t")
    assert tv.window == (450.0, 550.0)
    tv.goto("span")
    assert tv.window == (900.0, 3100.0)
    with pytest.raises(KeyError, match="bookmarks: 't', 'span'"):
        tv.goto("nope")


def test_a_bookmark_without_a_time_takes_the_selection_else_the_window(gpu):
    tv = TraceViewer(xw.open_profile(gpu))
    tv.window = (10.0, 30.0)
    tv.bookmark("middle")
    events = tv.events(track=0).head(3)
    tv.selected_events = events["event"].tolist()
    tv.bookmark("selected")
    rows = tv.bookmarks.set_index("name")
    assert tuple(rows.loc["middle"]) == (20.0, 20.0)
    start, end = rows.loc["selected"]
    assert start == pytest.approx(events["start_us"].min())
    assert end == pytest.approx((events["start_us"] + events["duration_us"]).max())


def test_the_view_s_changes_are_checked(gpu):
    tv = TraceViewer(xw.open_profile(gpu))
    with pytest.raises(traitlets.TraitError, match="no track"):
        tv.pinned_tracks = [10_000]
    with pytest.raises(traitlets.TraitError, match="two bookmarks"):
        tv._bookmarks = [{"name": "a", "start_us": 1.0, "end_us": 1.0},
                         {"name": "a", "start_us": 2.0, "end_us": 2.0}]
    tv.set_state({"_bookmarks": [{"name": "from the view", "start_us": 3.0, "end_us": 3.0}],
                  "hidden_tracks": [1, 1, 2]})  # as a view's change arrives
    assert tv.hidden_tracks == [1, 2]
    assert TraceViewer(tv.profile).bookmarks["name"].tolist() == ["from the view"]


def test_kept_per_profile_while_it_lives_and_not_grown_by_reruns(gpu):
    profile = xw.open_profile(gpu)
    before = marks_module.n_kept()
    made = []
    for _ in range(5):  # a cell run again: a new viewer on the same profile each time
        tv = TraceViewer(gpu)
        assert tv.profile is profile
        tv.pin(3)
        tv.bookmark("same", 12.0)
        made.append(tv)
    assert marks_module.n_kept() == before + 1
    again = TraceViewer(profile)
    assert again.pinned_tracks == [3] and again.bookmarks["name"].tolist() == ["same"]
    other = TraceViewer(xw.open_profile(GPU))  # another profile: its own marks
    assert other.bookmarks.empty or "same" not in other.bookmarks["name"].tolist()
    for widget in [*made, again]:
        widget.close()
    del tv, made, again, profile
    gc.collect()
    assert marks_module.n_kept() <= before  # gone with the profile
    fresh = TraceViewer(gpu)
    assert fresh.pinned_tracks == [] and fresh.bookmarks.empty


def test_a_pod_s_viewer_keeps_them_and_bookmarks_a_selection(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    from xprof_widgets.synthetic import write_synthetic

    run = write_synthetic(tmp_path, 2 * 2000, "tpu", hosts=2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        pod = xw.open_profile(run, client=client)
        try:
            tv = xw.TraceViewer(pod, hosts=pod.hosts[:1])
            first = tv._summary["tracks"]["id"][0]
            tv.pin(first)
            tv.hide(first + 1)
            tv.selected_events = tv.events(track=first).head(2)["event"].tolist()
            tv.bookmark("two ops")
            again = xw.TraceViewer(pod)
            assert again.pinned_tracks == [first] and again.hidden_tracks == [first + 1]
            start, end = again.bookmarks.iloc[0][["start_us", "end_us"]]
            assert 0 <= start < end
            with pytest.raises(KeyError, match="no track"):
                tv.pin(10**6)
        finally:
            pod.close()
