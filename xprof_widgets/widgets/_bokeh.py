"""Bokeh on the kernel side: the BokehJS bundles the views run, read from the installed bokeh
package's files (bokeh itself is never imported: the charts are written by `_charts`)."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

BUNDLES = ("bokeh", "bokeh-widgets", "bokeh-tables")
"""Classic-script bundles a view runs, in this order (the plugins need the core)."""

_PLUGIN_VERSION = re.compile(r'factory\(root\["Bokeh"\], "([^"]+)"\)')


def installed() -> bool:
    """Whether bokeh is installed: the charts need it, the Trace Viewer does not (Colab's TPU
    runtime has no bokeh)."""
    spec = find_spec("bokeh")
    return spec is not None and bool(spec.submodule_search_locations)


def _static_js_dir() -> Path:
    if not installed():
        raise ModuleNotFoundError(
            "bokeh is not installed; the charts draw with the BokehJS its wheel ships "
            "(pip install bokeh, then re-run the cell)"
        )
    return Path(find_spec("bokeh").submodule_search_locations[0]) / "server" / "static" / "js"


@lru_cache(maxsize=1)
def bokeh_js_bundles() -> tuple[tuple[str, ...], tuple[bytes, ...]]:
    """Names and bytes of the BokehJS bundles shipped inside the installed bokeh wheel."""
    js_dir = _static_js_dir()
    return BUNDLES, tuple((js_dir / f"{name}.min.js").read_bytes() for name in BUNDLES)


@lru_cache(maxsize=1)
def bokeh_js_version() -> str:
    """The version BokehJS registers itself under (`window.Bokeh[version]`).

    Read from the widgets plugin, which names the core version it attaches to; Python's package
    version spells pre-releases differently.
    """
    plugin = (_static_js_dir() / "bokeh-widgets.min.js").read_text(encoding="utf-8")
    found = _PLUGIN_VERSION.search(plugin)
    return found.group(1) if found else metadata.version("bokeh")

