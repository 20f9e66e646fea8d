"""Request/response plumbing shared by the widgets.

A widget's synced state stays small (Colab drops large comm messages); its view asks for data after
it renders, with custom messages, and the kernel answers with JSON content plus binary buffers split
into chunks of at most 4 MB. The front half is js/src/lib/transport.js.

    class Hello(RequestWidget):
        _bundle = "hello.js"  # xprof_widgets/static/hello.js, built from js/src/hello.js

        @handler("greet")
        def _greet(self, name: str) -> tuple[dict, list]:
            return {"text": f"hi {name}"}, [numpy.arange(3).tobytes()]
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import anywidget
import numpy as np
import traitlets

from ..errors import ProfileError
from . import _bokeh
from ._reruns import ClosedOnRerun

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""Upper bound of one reply message: JSON header plus its binary buffers."""
INLINE_CONTENT_BYTES = 64 * 1024
"""Larger JSON content travels as a UTF-8 buffer, chunked like the binary ones."""
_HEADER_RESERVE = 64 * 1024
"""Room left in each message for the Jupyter and widget headers and the part list."""
_MAX_PARTS = 1024
"""Buffers per message, which bounds the part list inside the reserve."""

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


def handler(method: str) -> Callable[[F], F]:
    """Expose a widget method to its view as request `method`; the view's params become kwargs.

    The method returns `(content, buffers)` or just `content`: a JSON-able dict and a list of
    bytes-like objects (bytes, memoryview, numpy arrays).
    """

    def mark(fn: F) -> F:
        fn._xw_request_method = method  # type: ignore[attr-defined]
        return fn

    return mark


class RequestWidget(ClosedOnRerun, anywidget.AnyWidget):
    """An anywidget whose view fetches its data through `@handler` methods; closed when the
    cell that displayed it runs again (_reruns.py).

    Subclasses set `_bundle` to the file name of their front end under xprof_widgets/static/.
    Every subclass answers `bokeh_js` (the BokehJS bundles of the installed bokeh, for
    js/src/charts/bokeh.js).
    """

    _bundle: ClassVar[str]
    _handlers: ClassVar[dict[str, str]] = {}
    _bokeh_version = traitlets.Unicode("").tag(sync=True)
    link = traitlets.Dict(help="Set by the view to ask the Profiler suite to show an op in "
                          "another tool: {'tool': 'trace' | 'op', 'op': name}.").tag(sync=True)
    _linked = traitlets.Bool(False, help="Inside the suite: views show their link buttons."
                             ).tag(sync=True)
    _notes = traitlets.List(traitlets.Unicode(), help="The profile's warnings (what was left out "
                            "of it), shown under the view.").tag(sync=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                method = getattr(value, "_xw_request_method", None)
                if isinstance(method, str):
                    handlers[method] = name
        cls._handlers = handlers

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on_msg(self._on_custom_message)

    @property
    def profile(self) -> Any:
        """The profile the view shows; setting it shows the profile's warnings too."""
        try:
            return self.__dict__["profile"]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no profile (closed)") from None

    @profile.setter
    def profile(self, value: Any) -> None:
        self.__dict__["profile"] = value
        self.show_notes()

    def show_notes(self) -> None:
        """Sends the profile's warnings to the view again (a suite adds one when a tool fails)."""
        self._notes = [str(note) for note in getattr(self.profile, "warnings", ())]

    def close(self) -> None:
        """Closes the comm and lets go of the profile and what the views were sent, so that a
        profile no other widget or variable holds can be freed (profile/cache.py)."""
        super().close()
        self._release()

    def _release(self) -> None:
        """Drops this widget's hold on its data; widgets with view state drop that too."""
        self.__dict__.pop("profile", None)

    @traitlets.default("_bokeh_version")
    def _default_bokeh_version(self) -> str:
        # Without bokeh the widget still opens: its charts' request for BokehJS says what to do.
        return _bokeh.bokeh_js_version() if _bokeh.installed() else ""

    @property
    def _esm(self) -> str:
        return read_bundle(STATIC_DIR / self._bundle)

    @handler("bokeh_js")
    def _bokeh_js(self) -> tuple[dict, list]:
        names, scripts = _bokeh.bokeh_js_bundles()
        return {"version": _bokeh.bokeh_js_version(), "names": names}, list(scripts)

    def _on_custom_message(self, _widget: object, content: Any, buffers: Sequence[Any]) -> None:
        if not isinstance(content, dict) or content.get("kind") != "request":
            return
        request_id = content.get("id")
        method = content.get("method")
        try:
            result = self._call(method, content.get("params") or {})
            for message, chunk_buffers in encode_response(request_id, *result):
                self.send(message, chunk_buffers)
        except Exception as exc:  # every failure becomes a reply the view can show
            log.debug("request %r failed", method, exc_info=True)
            self.send(
                {"kind": "error", "id": request_id, "method": method, "message": describe(exc)}
            )

    def _call(self, method: Any, params: dict) -> tuple[Any, list]:
        name = self._handlers.get(method) if isinstance(method, str) else None
        if name is None:
            known = ", ".join(sorted(self._handlers))
            raise LookupError(
                f"{type(self).__name__} answers no request {method!r} (it answers {known})"
            )
        result = getattr(self, name)(**params)
        if isinstance(result, tuple) and len(result) == 2:
            return result[0], list(result[1])
        return result, []


@lru_cache(maxsize=16)
def _read_bundle(path: Path, _mtime: float) -> str:
    return path.read_text(encoding="utf-8")


def read_bundle(path: Path) -> str:
    """The text of a built front end, re-read only when the file changes."""
    try:
        return _read_bundle(path, path.stat().st_mtime)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: the widget's JavaScript bundle is missing. It is built by the package build; "
            "run `pip install -e .` in the xprof_widgets checkout (needs Node.js and npm)."
        ) from None


def profile_title(profile: Any) -> str:
    """What a view's header names: the profile's source, and its run when it has one."""
    run = f" (run {profile.run})" if profile.run else ""
    return f"{profile.source}{run}"


def checked_choice(value: str, choices: Sequence[str] | None, problem: str) -> str:
    """`value` when it is one of `choices` (None: nothing to check against yet); else a
    TraitError saying `problem`, then the choices."""
    if choices is not None and value not in choices:
        raise traitlets.TraitError(f"{problem}{', '.join(choices)}")
    return value


def describe(exc: BaseException) -> str:
    """The message a view shows for a failed request: ours verbatim, others with their type."""
    if isinstance(exc, ProfileError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def jsonable(value: Any) -> Any:
    """A JSON-able copy for a view: NaN and inf become None, numpy scalars plain numbers."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and small arrays
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _as_bytes(buffer: Any) -> memoryview:
    view = memoryview(buffer)
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return view.cast("B")


def encode_response(
    request_id: Any,
    content: Any,
    buffers: Sequence[Any] = (),
    max_bytes: int = MAX_MESSAGE_BYTES,
) -> Iterator[tuple[dict, list[memoryview]]]:
    """Split one answer into reply messages of at most `max_bytes` each (see transport.js).

    Each message carries `parts`: for each of its buffers, the index of the answer buffer it is a
    slice of and the byte offset of that slice. The first carries `sizes` and the content.
    """
    text = json.dumps(content, allow_nan=False, default=_json_default, separators=(",", ":"))
    encoded = text.encode("utf-8")
    views = [_as_bytes(b) for b in buffers]
    capacity = max_bytes - _HEADER_RESERVE
    first: dict[str, Any] = {}
    if len(encoded) <= min(INLINE_CONTENT_BYTES, capacity // 2):
        first["content"] = json.loads(text)
    else:
        first["content_buffer"] = True
        views.append(memoryview(encoded))
    sizes = [v.nbytes for v in views]
    first["sizes"] = sizes
    first_cost = len(json.dumps(first).encode("utf-8"))
    if capacity - first_cost <= 0:
        raise ValueError(
            f"reply header of {first_cost} bytes does not fit a {max_bytes}-byte message"
        )

    chunks: list[list[tuple[int, int, memoryview]]] = [[]]
    room = capacity - first_cost
    for index, view in enumerate(views):
        offset = 0
        while True:
            if room <= 0 or len(chunks[-1]) == _MAX_PARTS:
                chunks.append([])
                room = capacity
            piece = view[offset : offset + room]
            chunks[-1].append((index, offset, piece))
            room -= piece.nbytes
            offset += piece.nbytes
            if offset >= view.nbytes:
                break

    for number, parts in enumerate(chunks):
        message: dict[str, Any] = {
            "kind": "response",
            "id": request_id,
            "chunk": number,
            "chunks": len(chunks),
            "parts": [[index, offset] for index, offset, _ in parts],
        }
        if number == 0:
            message.update(first)
        yield message, [piece for _, _, piece in parts]
