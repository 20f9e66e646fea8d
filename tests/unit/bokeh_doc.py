"""Reading the BokehJS documents the widgets send (widgets/_charts.py), for the tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def nodes(node: Any) -> Iterator[dict]:
    """Every dict of a JSON tree, depth first, parents before children."""
    stack = [node]
    while stack:
        item = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, dict):
            yield item
        if isinstance(item, (dict, list)):
            stack.extend(reversed(list(children)))


def models(doc: Any) -> list[dict]:
    """The document's model objects (`{"type": "object", ...}`), in document order."""
    return [n for n in nodes(doc) if n.get("type") == "object"]


def refs(doc: Any) -> list[str]:
    """The ids the document refers to (`{"id": ...}` alone)."""
    return [n["id"] for n in nodes(doc) if set(n) == {"id"}]
