"""The Graph Viewer's reply in binary columns: typed arrays and one string table, not JSON rows.

A whole module is tens of thousands of nodes; as JSON records its reply was 9.6 MB that the
page parsed on its own thread (seconds, one long frame). Here every string (names, opcodes,
shapes, sources, op names, HLO lines) is sent once in a string table and referred to by index,
and the numbers travel as little-endian typed arrays the page reads without parsing
(js/src/graph_viewer/wire.js decodes it).

Buffers, in order:
  strings  UTF-8 of the distinct strings, one after another
  ends     int32, each string's end in UTF-16 code units of the decoded text (JS string slices)
  text     int32 [STRING_COLUMNS x nodes]: string index per node, -1 for none
  numbers  float64 [NUMBER_COLUMNS x nodes]: NaN where the profile has no number
  ints     int32 [INT_COLUMNS x nodes]
  edges    int32 [EDGE_COLUMNS x edges]: node rows of source and target, operand index, the
           shape's string index
"""

from __future__ import annotations

import numpy as np
import pandas as pd

STRING_COLUMNS = ["name", "opcode", "shape", "fusion", "source", "op_name", "hlo"]
NUMBER_COLUMNS = ["time_us", "time_share", "flops", "bytes_accessed"]
INT_COLUMNS = ["distance", "expanded"]
EDGE_COLUMNS = ["source", "target", "operand_index", "shape"]


def encode_graph(nodes: pd.DataFrame, edges: pd.DataFrame, hlo: list[str]
                 ) -> tuple[dict, list[bytes]]:
    """(header, buffers) of a graph: `nodes` as `Neighbourhood.nodes()`, `edges` as its
    `edges()`, `hlo` one HLO line per node."""
    n = len(nodes)
    text = [nodes[c].to_numpy(object) for c in STRING_COLUMNS[:-1]]
    text.append(np.asarray(hlo, dtype=object))
    edge_shapes = edges["shape"].to_numpy(object)
    codes, distinct = pd.factorize(np.concatenate([*text, edge_shapes]), use_na_sentinel=True)
    codes = codes.astype("<i4")
    table = [str(s) for s in distinct]
    ends = np.cumsum([len(s.encode("utf-16-le")) // 2 for s in table], dtype="<i8")
    numbers = np.stack([nodes[c].to_numpy(float) for c in NUMBER_COLUMNS]) if n else np.zeros(0)
    ints = np.stack([nodes[c].to_numpy(np.int64) for c in INT_COLUMNS]) if n else np.zeros(0)
    names = pd.Index(nodes["name"])
    edge_cols = np.stack([names.get_indexer(edges["source"]), names.get_indexer(edges["target"]),
                          edges["operand_index"].to_numpy(np.int64),
                          codes[len(STRING_COLUMNS) * n:]]) if len(edges) else np.zeros(0)
    buffers = ["".join(table).encode("utf-8"), ends.astype("<i4").tobytes(),
               codes[:len(STRING_COLUMNS) * n].tobytes(), np.asarray(numbers, "<f8").tobytes(),
               np.asarray(ints, "<i4").tobytes(), np.asarray(edge_cols, "<i4").tobytes()]
    header = {"nodes": n, "edges": len(edges), "strings": len(table),
              "columns": {"text": STRING_COLUMNS, "numbers": NUMBER_COLUMNS, "ints": INT_COLUMNS,
                          "edges": EDGE_COLUMNS}}
    return header, buffers


__all__ = ["EDGE_COLUMNS", "INT_COLUMNS", "NUMBER_COLUMNS", "STRING_COLUMNS", "encode_graph"]
