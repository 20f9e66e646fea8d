"""Reading the BokehJS documents the widgets send (widgets/_charts.py), for the tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def nodes(node: Any) -> Iterator[dict]:
    """Every dict of a JSON tree, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from nodes(value)


def models(doc: Any) -> list[dict]:
    """The document's model objects (`{"type": "object", ...}`), in document order."""
    return [n for n in nodes(doc) if n.get("type") == "object"]


def refs(doc: Any) -> list[str]:
    """The ids the document refers to (`{"id": ...}` alone)."""
    return [n["id"] for n in nodes(doc) if set(n) == {"id"}]
