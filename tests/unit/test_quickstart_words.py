"""The quickstart says what the widgets do by default (a user tries it first)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRAG_DOES = {"select": "drag to select", "pan": "drag to pan", "zoom": "drag to zoom"}
"""What a plain drag on the timeline does under each tool, as the quickstart words it."""


def default_tool() -> str:
    view = (REPO / "js" / "src" / "trace_viewer" / "view.js").read_text()
    return re.search(r'this\.tool = "(\w+)"', view).group(1)


def quickstart_text() -> str:
    cells = json.loads((REPO / "notebooks" / "quickstart.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_the_quickstart_says_what_a_drag_does_by_default():
    text = quickstart_text().lower()
    tool = default_tool()
    assert DRAG_DOES[tool] in text
    for other, words in DRAG_DOES.items():
        if other != tool:
            assert words not in text, f"the quickstart says {words!r}; a drag does {tool}"
