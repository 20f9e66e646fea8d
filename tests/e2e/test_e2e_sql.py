"""Profile.sql in JupyterLab and Notebook 7: a query's DataFrame under the cell, and
`tv.show(frame)` selecting its events in the Trace Viewer and moving the view to them."""

from __future__ import annotations

import json

import harness
import pytest
from test_e2e_trace_viewer import READY, view_window

PROFILE = harness.REPO / "tests" / "data" / "compare" / "loader_fast.xplane.pb"
QUERY = ("SELECT name, count(*) AS n, sum(dur) / 1e6 AS total_ms, max(dur) / 1e3 AS longest_us\n"
         "FROM slice GROUP BY name ORDER BY total_ms DESC LIMIT 8")


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_a_query_and_its_events_in_the_trace_viewer(app_fixture, request):
    app = request.getfixturevalue(app_fixture)
    cells = [(f"import xprof_widgets as xw\nprofile = xw.open_profile({str(PROFILE)!r})\n"
             f"profile.sql('''{QUERY}''')"),
             "tv = xw.TraceViewer(profile, height=360)\ntv"]
    page = app.open_and_run(app.notebook(f"sql_{app_fixture}.ipynb", cells))
    app.wait_ready(page, READY)
    widget = page.locator(".xw-trace-viewer")

    # The query's result is a DataFrame, shown as pandas shows one.
    table = page.locator(".jp-OutputArea-output table.dataframe").first
    table.wait_for(timeout=10_000)
    rows = table.locator("tbody tr").all()
    assert len(rows) == 8
    expected = json.loads(harness.run_in_kernel(
        page, f"print(profile.sql('''{QUERY}''')['name'].to_json(orient='values'))"))
    assert [r.locator("td").first.inner_text() for r in rows] == expected
    if app_fixture == "lab":
        harness.screenshot(table, "sql_result")

    # tv.show: the load_batch events of every step selected, the view on them.
    before = view_window(widget)
    harness.run_in_kernel(page, "hits = profile.sql(\"SELECT id, ts, dur FROM slice WHERE "
                                "name = 'load_batch'\")\ntv.show(hits)")
    page.wait_for_function("() => document.querySelector('.xw-trace-viewer').dataset.selected "
                           "=== '6'", timeout=10_000)
    page.wait_for_function("(b) => document.querySelector('.xw-trace-viewer').dataset.window "
                           "!== b", arg=",".join(repr(v) for v in before), timeout=10_000)
    details = widget.locator(".xw-tv-details .xw-tv-title")
    details.wait_for(timeout=10_000)
    assert details.inner_text().startswith("6 events selected")
    assert widget.locator(".xw-tv-details td.xw-tv-name").all_inner_texts() == ["load_batch"]
    start, end = view_window(widget)
    span = json.loads(harness.run_in_kernel(
        page, "print([float(hits.ts.min()) / 1e3, float((hits.ts + hits.dur).max()) / 1e3])"))
    assert start <= span[0] and end >= span[1]
    same = "print(sorted(tv.selected_events) == sorted(hits['id'].tolist()))"
    assert harness.run_in_kernel(page, same).strip() == "True"
    if app_fixture == "lab":
        harness.screenshot(widget, "sql_show")
