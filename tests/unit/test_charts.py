"""The charts' BokehJS documents, written without bokeh: valid for the installed bokeh, each model
defined once, strict JSON, and no bokeh import on the way."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from bokeh_doc import models, refs

import xprof_widgets as xw
from xprof_widgets.widgets import _charts
from xprof_widgets.widgets.input_pipeline import report
from xprof_widgets.widgets.memory_viewer import chart_templates

DATA = "tests/data"


def _items() -> dict[str, dict]:
    ops = xw.OpProfile(f"{DATA}/tpu_v6e_inference.xplane.pb")
    items = {"roofline": ops._call("roofline", {})[0]["item"]}
    charts = report(xw.InputPipeline(f"{DATA}/tf_keras_cpu_slow_map.xplane.pb").analysis)
    items.update({f"input {k}": v for k, v in charts["charts"].items()})
    items.update({f"memory {k}": v for k, v in chart_templates().items()})
    return items


@pytest.fixture(scope="module")
def items() -> dict[str, dict]:
    return _items()


def test_every_model_and_property_exists_in_the_installed_bokeh(items):
    import bokeh.models  # registers every model class
    import bokeh.plotting  # noqa: F401  (and Figure)
    from bokeh.model import Model

    known = Model.model_class_reverse_map
    for key, item in items.items():
        assert item is not None, key
        assert item["doc"]["version"] and item["root_id"] == item["doc"]["roots"][0]["id"]
        for m in models(item["doc"]):
            assert m["name"] in known, (key, m["name"])
            unknown = set(m["attributes"]) - set(known[m["name"]].properties())
            assert not unknown, (key, m["name"], unknown)


def test_each_model_is_written_once_and_references_point_to_written_models(items):
    for key, item in items.items():
        ids = [m["id"] for m in models(item["doc"])]
        assert len(ids) == len(set(ids)), key
        assert set(refs(item["doc"])) <= set(ids), key


def test_the_charts_name_what_the_views_fill(items):
    names = {m["attributes"].get("name") for m in models(items["memory curve"]["doc"])}
    assert {"curve", "lifetime", "lifetime_span", "peak", "peak_label", "y_axis",
            "curve_hover"} <= names
    text = json.dumps(items["roofline"])
    assert "broadcast_add_fusion" in text and "ridge point" in text


def test_non_finite_numbers_are_strict_json():
    x = np.array([1.0, np.nan, np.inf, -np.inf])
    fig = _charts.Figure(title="t", height=100)
    fig.glyph("Line", _charts.source({"x": np.arange(4), "y": x}), x=_charts.field("x"),
              y=_charts.field("y"))
    item = _charts.json_item(fig)
    text = json.dumps(item, allow_nan=False)
    (cds,) = [m for m in models(item["doc"]) if m["name"] == "ColumnDataSource"]
    column = dict(cds["attributes"]["data"]["entries"])["y"]
    assert column == [1.0, {"type": "number", "value": "nan"},
                      {"type": "number", "value": "+inf"}, {"type": "number", "value": "-inf"}]
    assert '["x", [0, 1, 2, 3]]' in text


def test_making_every_chart_imports_no_bokeh():
    code = ("import sys; sys.path.insert(0, 'tests/unit'); import test_charts; "
            "test_charts._items(); print('bokeh' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
