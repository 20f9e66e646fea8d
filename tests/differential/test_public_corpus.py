"""Conformance on the public corpus (tests/data/public): profiles real programs wrote elsewhere.

Every file opens, or is refused with a ProfileError that names the file and says what it is;
what opens has the rows a brute-force recount of the file itself finds; every tool of the
registry, and the suite, answers it with data or with a ProfileError saying why it has none.
Nothing else may be raised.
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pytest
from recount import brute_depths, our_rows, recount_chrome, recount_xspace, shuffled_chrome

import xprof_widgets as xw
from xprof_widgets.tools import TOOLS
from xprof_widgets.widgets.profiler import Profiler

PUBLIC = Path(__file__).parents[1] / "data" / "public"
FILES = sorted(p for p in PUBLIC.rglob("*") if p.is_file() and p.name != "README.md")
NOT_TRACES = {
    "hta/execution_trace/benchmark_simple_add_et.json.gz": "execution trace",
    "hta/memory_analysis/memory_timeline.raw.gz": "memory timeline",
}
TRACES = [p for p in FILES if str(p.relative_to(PUBLIC)) not in NOT_TRACES]
SMALL_CHROME = [p for p in TRACES if p.stat().st_size < 200_000 and ".json" in p.name]
"""Chrome traces small enough to decode a shuffled copy of in a few seconds (test_invariants.py
shuffles the xplanes' planes and lines)."""


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(PUBLIC)) for p in paths]


@lru_cache(maxsize=4)
def opened(path: Path) -> xw.Profile:
    return xw.open_profile(path)


def test_the_corpus_is_all_here():
    """The README lists every folder, and every folder holds profiles: a file that went missing
    would quietly shrink every test below."""
    readme = (PUBLIC / "README.md").read_text()
    assert len(FILES) >= 33
    for top in {p.relative_to(PUBLIC).parts[0] for p in FILES}:
        assert f"`{top}/" in readme


@pytest.mark.parametrize("name", sorted(NOT_TRACES))
def test_what_is_not_a_trace_is_refused_by_name(name):
    path = PUBLIC / name
    with pytest.raises(xw.ProfileError) as refused:
        xw.open_profile(path)
    message = str(refused.value)
    assert str(path) in message
    assert NOT_TRACES[name] in message
    assert "not a" in message


@pytest.mark.parametrize("path", TRACES, ids=ids(TRACES))
def test_rows_equal_a_brute_force_recount(path):
    """Per row: the same events, starts exact to the picosecond on the file's own clock,
    durations and nesting depths; rows made only of derived events are XProf's (parity tests)."""
    profile = opened(path)
    data = path.read_bytes()
    recount = recount_xspace(data) if path.name.endswith(".xplane.pb") else recount_chrome(data)
    ours = {key: events for key, events in our_rows(profile).items()
            if not all(derived for *_, derived in events)}
    assert set(ours) == {key for key, events in recount.items() if events}
    origin = int(profile.origin_ps)
    for key, events in ours.items():
        derived = [(s, d) for s, d, _, made in events if made]
        expected = brute_depths([(s - origin, d) for s, d in recount[key]] + derived)
        assert [e[:3] for e in events] == expected, key


@pytest.mark.parametrize("path", SMALL_CHROME, ids=ids(SMALL_CHROME))
def test_event_order_in_the_file_changes_nothing(path, tmp_path):
    moved = tmp_path / path.name
    moved.write_bytes(shuffled_chrome(path.read_bytes(), random.Random(path.name)))
    assert our_rows(opened(path)) == our_rows(xw.open_profile(moved))


def answer(tool_name: str, widget) -> object:
    """What the tool's view shows, through its public face."""
    if tool_name == "TraceViewer":
        profile = widget.profile
        window = widget.window_data(0.0, profile.duration_us, 1600)
        assert len(window["slices"]) + len(window["counters"]) > 0
        return widget.events()
    if tool_name == "Overview":
        return widget.data.to_dict()
    return widget.to_dataframe()


@pytest.mark.parametrize("path", TRACES, ids=ids(TRACES))
def test_every_tool_answers_or_says_why_not(path):
    profile = opened(path)
    answered = []
    for entry in TOOLS:
        try:
            widget = getattr(xw, entry.name)(profile)
            result = answer(entry.name, widget)
        except xw.ProfileError as refused:
            assert str(profile.source) in str(refused) or str(path) in str(refused), entry.key
            continue
        assert isinstance(result, (pd.DataFrame, dict)), entry.key
        answered.append(entry.key)
    assert "trace" in answered and "overview" in answered


@pytest.mark.parametrize("path", TRACES, ids=ids(TRACES))
def test_the_suite_makes_every_tab_without_a_failure(path):
    profile = opened(path)
    suite = Profiler(profile)
    try:
        for key in suite.tab_keys:
            suite.tool(key)
        failures = [w for w in profile.warnings if "failed on this profile" in w
                    or "could not tell whether" in w]
        assert failures == []
    finally:
        suite.close()
