"""Flow overlays (trace/overlay.py, TraceViewer.overlay_flows): edges an analysis lays over the
Trace Viewer, sent only where they meet the window, on local profiles and pods (several hosts
in one Profile, and a PodProfile on Dask); DistributedView.link_collectives on DLRM's 8 ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.profile.model import PS_PER_US
from xprof_widgets.synthetic import write_synthetic
from xprof_widgets.trace.flows import MAX_ARROWS

DLRM = Path(__file__).parents[1] / "data" / "public" / "param" / "dlrm_v100_8rank"
HOSTS = 4


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return write_synthetic(tmp_path_factory.mktemp("overlay"), HOSTS * 3000, "tpu", hosts=HOSTS)


@pytest.fixture(scope="module")
def local(run_dir):
    return xw.open_profile(run_dir)


def _decode(answer: tuple) -> pd.DataFrame:
    """The overlay part of a window answer, back as a table (times in us after its start)."""
    content, buffers = answer
    if not content.get("n_overlay_flows"):
        return pd.DataFrame(columns=["from_event", "to_event", "from_track", "to_track",
                                     "overlay", "label", "from_t"])
    t = np.frombuffer(buffers[14], np.float32).reshape(-1, 2)
    where = np.frombuffer(buffers[15], np.uint32).reshape(-1, 6).astype(np.int64)
    tags = np.frombuffer(buffers[16], np.uint32).reshape(-1, 2)
    return pd.DataFrame({
        "from_event": where[:, 2], "to_event": where[:, 5], "from_track": where[:, 0],
        "to_track": where[:, 3], "overlay": np.asarray(content["overlays"])[tags[:, 0]],
        "label": np.asarray(content["overlay_labels"])[tags[:, 1]], "from_t": t[:, 0]})


def _edges_across_hosts(profile) -> pd.DataFrame:
    """Each host's first event to the next host's, and one late edge: host 0's last-starting
    event to host 1's."""
    tracks = profile.tracks
    firsts, lasts = [], []
    for host in profile.hosts[:HOSTS]:
        mine = tracks[(tracks["host"] == host) & (tracks["n_events"] > 0)]
        events = np.arange(int(mine["first_event"].min()), int(mine["end_event"].max()))
        firsts.append(int(events[np.argmin(profile.start_ps[events])]))
        lasts.append(int(events[np.argmax(profile.start_ps[events])]))
    return pd.DataFrame({"src": [*firsts[:-1], lasts[0]], "dst": [*firsts[1:], lasts[1]],
                         "label": [f"hop {i}" for i in range(len(firsts) - 1)] + ["late"]})


def test_edges_in_the_window_only_and_their_ends(local):
    tv = xw.TraceViewer(local)
    edges = _edges_across_hosts(local)
    tv.overlay_flows("hops", edges)
    table = tv.overlay_edges("hops")
    p = local
    assert sorted(table["from_event"]) == sorted(edges["src"])
    row = table.set_index("from_event").loc[int(edges["src"][0])]
    assert row["to_event"] == edges["dst"][0] and row["label"] == "hop 0"
    assert row["from_us"] == p.start_ps[int(edges["src"][0])] / PS_PER_US
    assert row["to_track"] == int(p.track_of(np.array([edges["dst"][0]]))[0])
    whole = _decode(tv._window(0.0, p.duration_us, 1200))
    assert len(whole) == len(edges) and set(whole["overlay"]) == {"hops"}
    # a window before the late edge: the hops (at each host's start) are sent, the late one not
    late = table[table["label"] == "late"]
    end = float(min(late["from_us"].min(), late["to_us"].min())) - 1.0
    early = _decode(tv._window(0.0, end, 1200))
    assert sorted(early["label"]) == ["hop 0", "hop 1", "hop 2"]
    # tracks not asked for (nor in a collapsed section) take their edges with them
    assert _decode(tv._window(0.0, p.duration_us, 1200, tracks=[], collapsed=[])).empty
    sections = sorted(set(p.tracks["section_id"]))
    assert len(_decode(tv._window(0.0, p.duration_us, 1200, tracks=[],
                                  collapsed=sections))) == len(edges)
    d = tv._details(int(edges["src"][0]))
    assert [(o["overlay"], o["label"], o["direction"], o["event"]) for o in d["overlays"]] == \
        [("hops", "hop 0", "out", int(edges["dst"][0]))]


def test_shown_hidden_replaced_and_removed(local):
    tv = xw.TraceViewer(local)
    edges = _edges_across_hosts(local)
    tv.overlay_flows("a", edges)
    tv.overlay_flows("b", edges.iloc[:1].drop(columns="label"))
    assert tv.overlays.to_dict("list") == {"name": ["a", "b"], "edges": [4, 1],
                                           "shown": [True, True], "labels": [4, 1]}
    tv.show_overlay("a", False)
    whole = _decode(tv._window(0.0, local.duration_us, 900))
    assert set(whole["overlay"]) == {"b"} and whole["label"].tolist() == [""]
    tv._overlays = [dict(o, shown=True) for o in tv._overlays]  # the view's checkbox
    assert tv.overlays["shown"].all()
    tv.overlay_flows("b", edges)  # a name laid again is replaced: the view refetches
    assert tv._overlays[1]["version"] == 2 and tv.overlays["edges"].tolist() == [4, 4]
    tv.remove_overlay("a")
    tv.remove_overlay("b")
    assert tv.overlays.empty and tv._overlays == []
    content, buffers = tv._window(0.0, local.duration_us, 900)
    assert "n_overlay_flows" not in content and len(buffers) == 14  # the answer as before
    with pytest.raises(KeyError, match="no overlay 'a'; overlays: none"):
        tv.remove_overlay("a")


@pytest.mark.parametrize(("edges", "message"), [
    (pd.DataFrame({"from": [0], "to": [1]}), "columns src and dst"),
    ([(0, 1)], "got list"),
    (pd.DataFrame({"src": [0, -1], "dst": [1, 2]}), r"1 src value\(s\) are not event ids"),
    (pd.DataFrame({"src": [0], "dst": [10**9]}), r"dst value\(s\).*1000000000 in row 0"),
    (pd.DataFrame({"src": [0.5], "dst": [1]}), "src value"),
    (pd.DataFrame({"src": [None], "dst": [1]}), "src value"),
])
def test_bad_event_ids_are_refused_naming_the_overlay_and_profile(local, edges, message):
    tv = xw.TraceViewer(local)
    with pytest.raises(ValueError, match=message) as caught:
        tv.overlay_flows("bad", edges)
    assert "overlay 'bad' on " in str(caught.value) and str(local.source) in str(caught.value)
    assert tv.overlays.empty


def test_a_100k_edge_overlay_sends_a_bounded_window(local):
    tv = xw.TraceViewer(local)
    rng = np.random.default_rng(0)
    n = 100_000
    tv.overlay_flows("many", pd.DataFrame({"src": rng.integers(0, local.n_events, n),
                                           "dst": rng.integers(0, local.n_events, n)}))
    whole = _decode(tv._window(0.0, local.duration_us, 400))
    assert 0 < len(whole) <= MAX_ARROWS  # one arrow per pixel pair of rows at most
    narrow = _decode(tv._window(0.0, local.duration_us / 1000, 400))
    assert len(narrow) < len(whole)


def test_dlrm_collectives_linked_to_their_last_arrival():
    profile = xw.open_profile(DLRM)
    dv = xw.DistributedView(profile)
    edges = dv.collective_edges()
    skew = dv.skew().set_index("instance")
    assert len(edges) == 8 * 7  # 8 collectives, every rank but the last one's kernel
    assert (edges["to_host"] == edges["instance"].map(skew["last_host"])).all()
    assert (edges["wait_us"] >= 0).all()
    first = edges[edges["instance"] == 0]
    assert first["wait_us"].max() == skew.loc[0, "spread_us"] == 7624.0
    assert first["label"].iat[0] == "all_to_all #0 (last: rank 7)"
    assert len(dv.collective_edges("all_reduce")) == 3 * 7
    tv = xw.TraceViewer(profile)
    dv.link_collectives(tv)
    table = tv.overlay_edges("collectives")
    hosts = profile.tracks["host"].to_numpy()
    assert set(hosts[table["from_track"]]) == {f"rank {r}" for r in range(8)}
    sent = _decode(tv._window(0.0, profile.duration_us, 1600))
    assert len(sent) == 56 and sent["label"].nunique() == 8


# ---- a PodProfile on Dask (tests/conftest.py's dask_client) -----------------------------------


def test_a_dask_pod_lays_the_same_edges_as_the_local_profile(run_dir, local, dask_client):
    pod = xw.open_profile(run_dir, client=dask_client)
    try:
        edges = _edges_across_hosts(local)
        tv = xw.TraceViewer(pod, hosts=pod.hosts)
        tl = xw.TraceViewer(local)
        tv.overlay_flows("hops", edges)
        tl.overlay_flows("hops", edges)
        pd.testing.assert_frame_equal(tv.overlay_edges("hops"), tl.overlay_edges("hops"))
        a = _decode(tv._window(0.0, local.duration_us, 1000))
        b = _decode(tl._window(0.0, local.duration_us, 1000))
        pd.testing.assert_frame_equal(a, b)
        assert tv._details(int(edges["src"][0]))["overlays"] == \
            tl._details(int(edges["src"][0]))["overlays"]
        # hosts not picked are one row each: their ends are drawn on that row's track
        rows_only = xw.TraceViewer(pod, hosts=pod.hosts[:1])
        rows_only.overlay_flows("hops", edges)
        summary = rows_only._summary
        host_rows = [s for s, k in zip(summary["sections"]["id"], summary["sections"]["kind"],
                                       strict=True) if k == "pod-host"]
        sent = _decode(rows_only._window(0.0, local.duration_us, 1000, tracks=None,
                                         collapsed=host_rows))
        n_tracks = len(pod.tracks)
        hop0 = sent[sent["label"] == "hop 0"].iloc[0]
        assert hop0["from_track"] < n_tracks and hop0["to_track"] == n_tracks + 1
        assert set(summary["tracks"]["id"]) >= set(sent["to_track"])
    finally:
        pod.close()


def test_dlrm_on_dask_links_the_collectives_as_locally(dask_client):
    pod = xw.open_profile(DLRM, client=dask_client)
    try:
        tv = xw.TraceViewer(pod, hosts=pod.hosts)
        xw.DistributedView(pod).link_collectives(tv)
        local = xw.TraceViewer(xw.open_profile(DLRM))
        xw.DistributedView(local.profile).link_collectives(local)
        pd.testing.assert_frame_equal(tv.overlay_edges("collectives"),
                                      local.overlay_edges("collectives"))
    finally:
        pod.close()
