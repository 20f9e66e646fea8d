"""Search against a brute-force scan of every event's names."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xprof_widgets as xw
from xprof_widgets.trace import search

FIXTURE = Path(__file__).parent.parent / "data" / "tpu_v6e_inference.xplane.pb"
PROFILE = xw.open_profile(FIXTURE)


def text_stats(profile) -> list[list[str]]:
    """Each metadata row's text stat values."""
    return [[v for v in stats.values() if isinstance(v, str)] for stats in profile.metadata["stats"]]


def brute_force(profile, pattern: str, regex: bool = False, case: bool = False) -> np.ndarray:
    """Every event of a track whose full or display name or a text stat of its metadata
    matches, by (start, event)."""
    flags = 0 if case else re.IGNORECASE
    rx = re.compile(pattern if regex else re.escape(pattern), flags)
    tracks = profile.tracks  # first: it makes the derived rows, which add events and metadata
    full = profile.metadata["name"].tolist()
    short = profile.metadata["display_name"].tolist()
    stats = text_stats(profile)
    meta = profile.meta.tolist()
    hits = []
    for track in tracks.itertuples():
        for e in range(track.first_event, track.end_event):
            m = meta[e]
            if rx.search(full[m]) or rx.search(short[m]) or any(rx.search(v) for v in stats[m]):
                hits.append(e)
    hits = np.array(hits, np.int64)
    return hits[np.lexsort((hits, profile.start_ps[hits]))]


@pytest.mark.parametrize(("pattern", "regex", "case"), [
    ("fusion", False, False), ("FUSION", False, False), ("FUSION", False, True),
    ("copy-done", False, False), (r"%fusion\.\d+ = bf16", True, True), ("execute$", True, False),
    ("no such op anywhere", False, False), ("(", False, False), ("", False, False),
])
def test_hits_are_exactly_the_brute_force_scan_in_time_order(pattern, regex, case):
    result = search(PROFILE, pattern, regex=regex, case=case)
    expected = brute_force(PROFILE, pattern, regex, case)
    assert result.n_hits == expected.shape[0] and not result.truncated
    assert result.event.tolist() == expected.tolist()
    assert np.array_equal(result.start_us, PROFILE.start_ps[expected] / 1e6)
    assert result.track.tolist() == PROFILE.track_of(expected).tolist()


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(PROFILE.metadata["name"].tolist()), data=st.data())
def test_any_piece_of_a_name_finds_its_events(name, data):
    a = data.draw(st.integers(0, max(0, len(name) - 1)))
    b = data.draw(st.integers(a, len(name)))
    pattern = name[a:b]
    result = search(PROFILE, pattern, regex=False)
    assert result.event.tolist() == brute_force(PROFILE, pattern).tolist()


def test_limit_keeps_the_earliest_hits_and_counts_all():
    expected = brute_force(PROFILE, "fusion")
    result = search(PROFILE, "fusion", limit=25)
    assert result.truncated and result.n_hits == expected.shape[0]
    assert result.event.tolist() == expected[:25].tolist()


def test_next_and_previous_hit_walk_all_hits():
    expected = brute_force(PROFILE, "copy-done")
    starts = PROFILE.start_ps[expected]
    result = search(PROFILE, "copy-done", limit=3)  # walks beyond the listed hits
    for k in (0, 1, 57, expected.shape[0] - 1):
        t_us = starts[k] / 1e6
        later = expected[starts > starts[k]]
        earlier = expected[starts < starts[k]]
        assert result.next_after(t_us) == (int(later[0]) if later.shape[0] else None)
        previous = result.previous_before(t_us)
        if earlier.shape[0]:  # the latest hit before t (any of several starting together)
            assert previous in earlier.tolist()
            assert PROFILE.start_ps[previous] == starts[starts < starts[k]].max()
        else:
            assert previous is None
    assert result.next_after(starts[-1] / 1e6) is None
    assert result.previous_before(starts[0] / 1e6) is None


def test_a_bad_regex_is_a_value_error():
    with pytest.raises(ValueError, match="not a valid regular expression"):
        search(PROFILE, "(", regex=True)


def kinds_by_brute_force(profile, pattern: str) -> dict[str, list[int]]:
    """Events whose shown name contains the pattern, those whose full name only does, and
    those a text stat of their metadata only does."""
    rx = re.compile(re.escape(pattern), re.IGNORECASE)
    profile.derive_rows()  # first: search counts the derived rows' events too
    full = profile.metadata["name"].tolist()
    short = profile.metadata["display_name"].tolist()
    stats = text_stats(profile)
    kinds: dict[str, list[int]] = {"name": [], "text": [], "stats": []}
    for e, m in enumerate(profile.meta.tolist()):
        if rx.search(short[m]):
            kinds["name"].append(e)
        elif rx.search(full[m]):
            kinds["text"].append(e)
        elif any(rx.search(v) for v in stats[m]):
            kinds["stats"].append(e)
    return kinds


@pytest.mark.parametrize(("pattern", "found"), [("fusion.1", ("name", "text")),
                                                ("host_offload_stress", ("name", "stats"))])
def test_hits_by_name_hlo_text_and_stats_are_counted_apart_and_listed_apart(pattern, found):
    """fusion.1: broadcast_add_fusion.1 by name, ops reading %fusion.1 by HLO text; the test's
    source file: host threads named after it, and the XLA ops it made through their `source`."""
    kinds = kinds_by_brute_force(PROFILE, pattern)
    assert all(kinds[kind] for kind in found)  # the fixture has them: the test can tell apart
    every = search(PROFILE, pattern, limit=10**6)
    assert every.n_by == {kind: len(events) for kind, events in kinds.items()}
    assert every.n_hits == sum(every.n_by.values())
    matched = dict(zip(every.event.tolist(), every.matched().tolist(), strict=True))
    for kind, expected in kinds.items():
        assert {e for e, k in matched.items() if k == kind} == set(expected)
    for kind, expected in kinds.items():
        only = search(PROFILE, pattern, match=kind, limit=10**6)
        assert sorted(only.event.tolist()) == expected and only.n_hits == len(expected)
        assert only.n_by == every.n_by
        assert set(only.frame()["matched"]) == ({kind} if expected else set())


def test_python_reads_the_query_as_the_search_box_does():
    tv = xw.TraceViewer(PROFILE)
    try:
        slashed = tv.search(r"/copy-done\.[13]$/")
        assert len(slashed) > 0
        assert slashed["event"].tolist() == tv.search(r"copy-done\.[13]$", regex=True)["event"].tolist()
        assert tv.search("/copy-done.1/", regex=False).empty  # explicit: the text as it is
    finally:
        tv.close()


def test_an_unknown_kind_of_match_is_refused_by_name():
    with pytest.raises(ValueError, match="match='hlo'"):
        search(PROFILE, "fusion", match="hlo")
