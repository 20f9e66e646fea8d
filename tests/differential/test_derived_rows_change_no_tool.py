"""Rows we derive only for the Trace Viewer (TPU framework rows, GPU streams' XLA rows) change
no other tool: every tool's DataFrame is the same with them and without them
(XPROF_WIDGETS_FRAMEWORK_ROWS=never), on every XSpace fixture. A tool that read a derived row as
device work (an `XLA Modules - from #N` slice spans a whole module run) would count it twice."""

from __future__ import annotations

import fixture_files
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets import tools
from xprof_widgets.errors import ProfileError

TOOLS = [t for t in tools.TOOLS if t.key not in ("trace", "memory")]  # these draw the rows


def frames(path, monkeypatch, rows: str) -> dict[str, pd.DataFrame]:
    monkeypatch.setenv("XPROF_WIDGETS_FRAMEWORK_ROWS", rows)
    profile = xw.open_profile(path)
    out = {}
    for tool in TOOLS:
        if tool.offered_for(profile):
            out[tool.key] = table(getattr(xw, tool.name)(profile))
    return out


def table(widget) -> pd.DataFrame:
    """A tool's DataFrame; the Overview's numbers (less the trace's own event and row counts,
    which do count the derived rows); a tool that has nothing to show, its message."""
    if isinstance(widget, xw.Overview):
        data = widget.data.to_dict()
        data["run"] = {k: v for k, v in data["run"].items() if k not in ("events", "tracks")}
        return pd.DataFrame({"overview": [repr(data)]})
    try:
        return widget.to_dataframe()
    except ProfileError as exc:
        return pd.DataFrame({"error": [str(exc)]})


@pytest.mark.parametrize("path", fixture_files.XSPACE, ids=fixture_files.ids(fixture_files.XSPACE))
def test_tools_ignore_derived_rows(path, monkeypatch):
    with_rows = frames(path, monkeypatch, "always")
    without = frames(path, monkeypatch, "never")
    assert with_rows.keys() == without.keys()
    for key, frame in with_rows.items():
        pd.testing.assert_frame_equal(frame, without[key], obj=f"{path.name}: {key}")


def test_the_gpu_fixtures_have_derived_rows():
    profile = xw.open_profile(fixture_files.DATA / "synthetic_gpu.xplane.pb")
    assert profile.tracks["name"].str.fullmatch(r"XLA (Modules|Ops) - from #\d+").sum() >= 8
