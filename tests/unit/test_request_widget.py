"""The kernel half of the widget transport: dispatch, chunking, errors, BokehJS, import cost."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xprof_widgets.errors import ProfileError
from xprof_widgets.widgets import _base, _bokeh, _charts
from xprof_widgets.widgets._base import RequestWidget, encode_response, handler

TINY_ESM = """
export default { render() {} };
"""


class Sample(RequestWidget):
    _esm = TINY_ESM

    @handler("echo")
    def _echo(self, text: str, n: int = 0) -> tuple[dict, list]:
        return {"text": text}, [np.arange(n, dtype=np.uint32)]

    @handler("plain")
    def _plain(self) -> dict:
        return {"only": "content"}

    @handler("broken")
    def _broken(self) -> dict:
        raise ProfileError("/logs/run: no xplane.pb found; pass the run directory")

    @handler("crash")
    def _crash(self) -> dict:
        return {"x": 1} / 0


class Child(Sample):
    @handler("extra")
    def _extra(self) -> dict:
        return {}


def sent_by(widget: RequestWidget, request: dict) -> list[tuple[dict, list]]:
    sent: list[tuple[dict, list]] = []
    widget.send = lambda content, buffers=None: sent.append((content, list(buffers or [])))
    widget._on_custom_message(widget, request, [])
    return sent


def reassemble(messages: list[tuple[dict, list]]) -> tuple[object, list[bytes]]:
    """What js/src/lib/transport.js does with the messages, in Python."""
    first = messages[0][0]
    assert [m["chunk"] for m, _ in messages] == list(range(len(messages)))
    assert all(m["chunks"] == len(messages) for m, _ in messages)
    out = [bytearray(size) for size in first["sizes"]]
    for message, buffers in messages:
        assert len(message["parts"]) == len(buffers)
        for (index, offset), piece in zip(message["parts"], buffers, strict=True):
            out[index][offset : offset + len(piece)] = bytes(piece)
    blobs = [bytes(b) for b in out]
    if first.get("content_buffer"):
        return json.loads(blobs.pop().decode("utf-8")), blobs
    return first["content"], blobs


def message_bytes(message: dict, buffers: list) -> int:
    return len(json.dumps(message).encode("utf-8")) + sum(memoryview(b).nbytes for b in buffers)


def test_handlers_are_collected_through_inheritance():
    assert Sample._handlers == {
        "bokeh_js": "_bokeh_js",
        "echo": "_echo",
        "plain": "_plain",
        "broken": "_broken",
        "crash": "_crash",
    }
    assert Child._handlers["extra"] == "_extra" and "echo" in Child._handlers
    assert "extra" not in Sample._handlers


def test_request_params_become_kwargs_and_buffers_round_trip():
    sent = sent_by(
        Sample(), {"kind": "request", "id": 7, "method": "echo", "params": {"text": "hé", "n": 5}}
    )
    assert len(sent) == 1
    message = sent[0][0]
    assert (message["kind"], message["id"], message["chunk"], message["chunks"]) == (
        "response",
        7,
        0,
        1,
    )
    content, buffers = reassemble(sent)
    assert content == {"text": "hé"}
    assert np.frombuffer(buffers[0], np.uint32).tolist() == [0, 1, 2, 3, 4]


def test_a_handler_may_return_content_only():
    content, buffers = reassemble(
        sent_by(Sample(), {"kind": "request", "id": 1, "method": "plain"})
    )
    assert content == {"only": "content"} and buffers == []


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("broken", {}, "/logs/run: no xplane.pb found; pass the run directory"),
        ("crash", {}, "TypeError: unsupported operand type(s) for /: 'dict' and 'int'"),
        ("echo", {"bogus": 1}, "TypeError: "),
        ("nope", {}, "LookupError: Sample answers no request 'nope' (it answers bokeh_js, "),
    ],
)
def test_failures_become_error_replies(method, params, expected):
    sent = sent_by(Sample(), {"kind": "request", "id": 3, "method": method, "params": params})
    assert len(sent) == 1
    message, buffers = sent[0]
    assert (message["kind"], message["id"], message["method"], buffers) == ("error", 3, method, [])
    assert message["message"].startswith(expected)


def test_other_custom_messages_are_left_alone():
    widget = Sample()
    assert sent_by(widget, {"kind": "anywidget-command", "id": 1, "name": "x"}) == []
    assert sent_by(widget, ["not", "a", "dict"]) == []


def test_content_that_is_not_json_becomes_an_error():
    class NaN(Sample):
        @handler("nan")
        def _nan(self) -> dict:
            return {"value": math.nan}

    ((message, _),) = sent_by(NaN(), {"kind": "request", "id": 1, "method": "nan"})
    assert message["kind"] == "error" and "ValueError" in message["message"]


def test_numpy_scalars_in_content_are_plain_json():
    ((message, _),) = encode_response(
        1, {"n": np.int64(3), "x": np.float32(0.5), "a": np.arange(2)}
    )
    assert message["content"] == {"n": 3, "x": 0.5, "a": [0, 1]}


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 5000), max_size=6),
    content_len=st.integers(0, 3000),
    room=st.integers(1000, 6000),
)
def test_chunks_never_exceed_the_limit_and_reassemble_exactly(sizes, content_len, room):
    max_bytes = _base._HEADER_RESERVE + room
    rng = np.random.default_rng(len(sizes) * 7919 + content_len)
    buffers = [rng.integers(0, 256, size, dtype=np.uint8) for size in sizes]
    content = {"text": "x" * content_len}
    messages = list(encode_response(9, content, buffers, max_bytes=max_bytes))
    for message, pieces in messages:
        payload = sum(memoryview(p).nbytes for p in pieces)
        first = {k: message[k] for k in ("content", "content_buffer", "sizes") if k in message}
        inline = len(json.dumps(first)) if first else 0
        assert payload + inline <= room
        assert message_bytes(message, pieces) <= max_bytes
    got_content, got_buffers = reassemble(messages)
    assert got_content == content
    assert got_buffers == [b.tobytes() for b in buffers]


def test_real_sized_answers_stay_under_4_mb_per_message():
    data = np.arange(3_000_000, dtype=np.float64)  # 24 MB
    big_content = {"rows": [f"event name {i}" for i in range(20_000)]}  # ~300 kB of JSON
    messages = list(encode_response(1, big_content, [data, b"tail"]))
    assert len(messages) >= 6
    assert messages[0][0]["content_buffer"] is True and "content" not in messages[0][0]
    assert all(message_bytes(m, b) <= _base.MAX_MESSAGE_BYTES for m, b in messages)
    content, buffers = reassemble(messages)
    assert content == big_content
    assert buffers == [data.tobytes(), b"tail"]


def test_non_contiguous_arrays_are_sent_by_value():
    matrix = np.arange(12, dtype=np.int16).reshape(3, 4)
    _, buffers = reassemble(list(encode_response(1, {}, [matrix[:, ::2], matrix.T])))
    assert buffers == [matrix[:, ::2].tobytes(), matrix.T.tobytes()]


def test_bokeh_js_answers_the_three_bundles_of_the_installed_bokeh():
    sent = sent_by(Sample(), {"kind": "request", "id": 2, "method": "bokeh_js"})
    content, buffers = reassemble(sent)
    assert content["names"] == ["bokeh", "bokeh-widgets", "bokeh-tables"]
    assert content["version"] == Sample()._bokeh_version
    assert [len(b) for b in buffers] == [len(s) for s in _bokeh.bokeh_js_bundles()[1]]
    assert b"root.Bokeh = bokeh" in buffers[0]
    assert f'factory(root["Bokeh"], "{content["version"]}")'.encode() in buffers[1]
    assert all(message_bytes(m, b) <= _base.MAX_MESSAGE_BYTES for m, b in sent)


def test_without_bokeh_a_widget_opens_and_its_charts_say_how_to_get_it(monkeypatch):
    """Colab's TPU runtime has no bokeh: the Trace Viewer needs none, a chart's request says why."""
    monkeypatch.setattr(_bokeh, "find_spec", lambda name: None)
    _bokeh.bokeh_js_version.cache_clear()
    _bokeh.bokeh_js_bundles.cache_clear()
    widget = Sample()
    assert widget._bokeh_version == ""
    ((reply, _),) = sent_by(widget, {"kind": "request", "id": 3, "method": "bokeh_js"})
    assert reply["kind"] == "error" and "pip install bokeh" in reply["message"]


def test_json_item_is_a_bokeh_document_that_travels_as_content():
    chart = _charts.Figure(title="squares", height=100)
    x = np.arange(5)
    chart.glyph("Line", _charts.source({"x": x, "y": x ** 2}), x=_charts.field("x"),
                y=_charts.field("y"))
    item = _charts.json_item(chart)
    assert {"target_id", "root_id", "doc"} <= item.keys()
    content, _ = reassemble(list(encode_response(1, {"item": item})))
    assert content["item"]["root_id"] == item["root_id"]


def test_initial_state_is_small():
    state = Sample().get_state()
    assert len(json.dumps(state)) < 2_000
    assert state["_bokeh_version"] == _bokeh.bokeh_js_version()


@pytest.mark.parametrize("bundle", sorted(_base.STATIC_DIR.glob("*.js")), ids=lambda p: p.name)
def test_built_bundles_fit_in_the_initial_state(bundle: Path):
    """anywidget ships `_esm` with the widget's state, which must stay under 100 kB."""
    assert bundle.stat().st_size < 100_000


def test_a_missing_bundle_says_how_to_build_it():
    class Unbuilt(RequestWidget):
        _bundle = "does_not_exist.js"

    with pytest.raises(FileNotFoundError, match=r"does_not_exist\.js.*pip install -e \."):
        Unbuilt()


def test_importing_the_widget_plumbing_loads_neither_bokeh_nor_jax():
    code = (
        "import sys, xprof_widgets, xprof_widgets.widgets._base, xprof_widgets.widgets._bokeh;"
        "print(sorted(m for m in ('bokeh', 'jax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
