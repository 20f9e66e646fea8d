"""Profile.sql: DuckDB over the decoded columns, tables named as Perfetto's, stats on demand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.profile import sql

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def cpu() -> xw.Profile:
    return xw.open_profile(DATA / "compare" / "batch_large.xplane.pb")


@pytest.fixture(scope="module")
def tpu() -> xw.Profile:
    return xw.open_profile(DATA / "synthetic_tpu.xplane.pb")


def session(profile: xw.Profile) -> sql.Session:
    profile.sql("SELECT 1")
    return profile.memo(("sql",), lambda: None)


def test_slice_is_every_event_in_nanoseconds(cpu):
    frame = cpu.sql("SELECT id, ts, dur, name, track_id, depth FROM slice ORDER BY id")
    assert len(frame) == cpu.n_events
    assert frame["id"].tolist() == list(range(cpu.n_events))
    assert (frame["ts"].to_numpy() == cpu.start_ps // 1000).all()
    assert (frame["dur"].to_numpy() == cpu.duration_ps // 1000).all()
    assert frame["name"].tolist() == cpu.display_names[cpu.meta].tolist()
    assert (frame["track_id"].to_numpy() == cpu.track_of(np.arange(cpu.n_events))).all()
    assert (frame["depth"].to_numpy() == cpu.depth).all()
    assert frame["name"].dtype == object  # plain strings, not DuckDB's ENUM codes


def test_the_events_are_read_in_place_and_derived_columns_made_when_named(tpu):
    s = session(tpu)
    for column, array in (("start_ps", tpu.start_ps), ("duration_ps", tpu.duration_ps),
                          ("meta", tpu.meta), ("depth", tpu.depth)):
        assert s.columns[column] is array
    assert not {"id", "name", "category", "full_name"} & set(s.columns)
    tpu.sql("SELECT sum(dur) FROM slice")
    assert "name" not in s.columns
    tpu.sql("SELECT name, count(*) FROM slice GROUP BY name")
    assert "name" in s.columns and "full_name" not in s.columns
    codes = s.columns["name"].codes
    assert codes.dtype.itemsize <= 2  # a few thousand names: 2 bytes an event


def test_a_grouped_aggregate_matches_pandas(tpu):
    frame = tpu.sql("SELECT name, count(*) AS n, sum(dur) AS total FROM slice GROUP BY name")
    events = tpu.events()
    expected = events.groupby("name").size()
    got = frame.set_index("name")["n"]
    assert got.sort_index().to_dict() == expected.sort_index().to_dict()


def test_tracks_join_as_in_perfetto(cpu):
    tracks = cpu.sql("SELECT * FROM track ORDER BY id")
    assert list(tracks.columns) == ["id", "name", "section", "section_kind", "host", "kind",
                                    "n_events", "max_depth", "ts", "dur"]
    assert tracks["name"].tolist() == cpu.tracks["name"].tolist()
    per_thread = cpu.sql("SELECT t.name AS thread, count(*) AS n FROM slice s "
                         "JOIN track t ON s.track_id = t.id GROUP BY t.name")
    assert per_thread.set_index("thread")["n"].to_dict() == dict(
        zip(cpu.tracks["name"], cpu.tracks["n_events"], strict=True))


def test_ops_carry_their_category_and_program(cpu, tpu):
    # CPU: the op profile names them (events name their op in stats only).
    ops = analyze_op_profile(cpu).to_dataframe().set_index("name")
    frame = cpu.sql("SELECT DISTINCT name, category, program FROM slice WHERE category IS "
                    "NOT NULL")
    assert set(frame["name"]) == set(ops.index)
    for row in frame.itertuples():
        assert (row.category, row.program) == (ops.loc[row.name, "category"], "jit_step")
    assert cpu.sql("SELECT count(*) AS n FROM slice WHERE name = 'train 0' AND category IS "
                   "NULL")["n"].iat[0] == 1
    # TPU: from the op metadata.
    fusions = tpu.sql("SELECT count(*) AS n FROM slice WHERE category = 'loop fusion' AND "
                      "program = 'jit_train_step'")
    assert fusions["n"].iat[0] > 1000


def test_step_and_op_tables_come_from_the_analyses(cpu):
    steps = cpu.sql("SELECT * FROM step ORDER BY step")
    expected = analyze_input_pipeline(cpu).steps
    assert steps["step"].tolist() == expected["step"].tolist()
    assert np.allclose(steps["dur"], expected["duration_us"] * 1000, atol=1)
    assert np.allclose(steps["input_dur"], expected["input_us"] * 1000, atol=1)
    ops = cpu.sql("SELECT name, time_us FROM op ORDER BY time_us DESC")
    assert ops["name"].tolist() == analyze_op_profile(cpu).to_dataframe()["name"].tolist()
    slowest = cpu.sql("SELECT s.name, max(s.dur) AS longest FROM slice s JOIN op o ON "
                      "s.name = o.name GROUP BY s.name ORDER BY longest DESC LIMIT 1")
    assert len(slowest) == 1


def test_args_decode_only_the_slices_a_query_can_reach(cpu, monkeypatch):
    decoded: list[int] = []
    original = sql._stats

    def counting(profile, event):
        decoded.append(event)
        return original(profile, event)

    monkeypatch.setattr(sql, "_stats", counting)
    frame = cpu.sql("SELECT s.id, a.key, a.display_value FROM slice s JOIN args a USING "
                    "(arg_set_id) WHERE s.name = 'dot' AND a.key = 'hlo_module'")
    dots = cpu.events(name="^dot$").query("name == 'dot'")["event"].tolist()
    assert sorted(frame["id"]) == sorted(dots) and set(frame["display_value"]) == {"jit_step"}
    assert sorted(decoded) == sorted(dots)
    decoded.clear()
    by_id = cpu.sql(f"SELECT key, value_type, int_value, string_value FROM args WHERE "
                    f"arg_set_id = {dots[0]}").set_index("key")
    assert decoded == [dots[0]]
    assert by_id.loc["hlo_op", "string_value"] == "dot"
    assert by_id.loc["hlo_op", "value_type"] == "string"


def test_extract_arg_reads_one_stat_of_the_rows_kept(cpu):
    frame = cpu.sql("SELECT id, extract_arg(arg_set_id, 'hlo_module') AS module, "
                    "extract_arg(arg_set_id, 'args.hlo_op') AS op FROM slice "
                    "WHERE name = 'dot.1'")
    assert len(frame) == 6 and set(frame["module"]) == {"jit_step"}
    assert set(frame["op"]) == {"dot.1"}
    assert cpu.sql("SELECT extract_arg(0, 'no such stat') AS v")["v"].isna().all()


def test_a_query_that_could_reach_every_slices_args_is_refused(tpu, monkeypatch):
    monkeypatch.setattr(sql, "ARGS_LIMIT", 100)
    with pytest.raises(xw.ProfileError, match=r"args of 54,290 slices.*extract_arg"):
        tpu.sql("SELECT * FROM slice s JOIN args a USING (arg_set_id) WHERE a.key = 'run_id'")
    narrow = tpu.sql("SELECT * FROM slice s JOIN args a USING (arg_set_id) WHERE s.id "
                     "BETWEEN 100 AND 109 AND a.key = 'run_id'")
    assert len(narrow) and narrow["id"].between(100, 109).all()


def test_counters_are_their_own_table(tmp_path):
    events = [{"ph": "X", "name": "step", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]
    events += [{"ph": "C", "name": "memory", "pid": 1, "ts": t, "args": {"bytes": 10 * t}}
               for t in range(0, 100, 10)]
    path = tmp_path / "counters.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = xw.open_profile(path)
    assert profile.sql("SELECT name FROM slice")["name"].tolist() == ["step"]
    counter = profile.sql("SELECT ts, value FROM counter ORDER BY ts")
    assert counter["value"].tolist() == [10.0 * t for t in range(0, 100, 10)]
    assert counter["ts"].tolist() == [1000 * t for t in range(0, 100, 10)]


def test_views_made_by_the_user_stay_for_later_queries(cpu):
    cpu.sql("CREATE OR REPLACE TEMP VIEW dots AS SELECT * FROM slice WHERE name LIKE 'dot%'")
    assert set(cpu.sql("SELECT DISTINCT name FROM dots")["name"]) == {"dot", "dot.1"}
    bounds = cpu.sql("SELECT * FROM trace_bounds")
    assert bounds["start_ts"].iat[0] == 0
    assert bounds["end_ts"].iat[0] == pytest.approx(cpu.duration_us * 1000, abs=1)


@pytest.mark.parametrize(("query", "message"), [
    ("SELEC name FROM slice", "syntax error at or near \"SELEC\""),
    ("SELECT * FROM slices", "slices does not exist"),
    ("SELECT duration FROM slice", "\"duration\" not found"),
    ("", "needs a query"),
])
def test_bad_sql_names_the_problem(cpu, query, message):
    with pytest.raises(xw.ProfileError, match=message) as info:
        cpu.sql(query)
    assert "docs/sql.md" in str(info.value) or not query


def test_results_are_dataframes_even_for_statements_without_rows(cpu):
    assert isinstance(cpu.sql("SELECT 1 AS one"), pd.DataFrame)
    assert isinstance(cpu.sql("SET threads = 2"), pd.DataFrame)


def test_tpu_program_ids_use_all_64_bits():
    tpu = xw.open_profile(DATA / "tpu_v6e_inference.xplane.pb")
    ops = tpu.sql("SELECT program, program_id FROM op ORDER BY program_id DESC LIMIT 1")
    assert int(ops["program_id"].iat[0]) > 2**63
