// The graph reply's binary columns (xprof_widgets/widgets/graph_wire.py) back into the rows the
// view and the layout read: one decode of the string table, typed arrays read in place, so a
// whole module's reply costs the page no JSON parse.
import { typed } from "../lib/transport.js";

/** The table's strings: the UTF-8 buffer decoded once, cut at the UTF-16 ends. */
export function stringTable(bytes, endBytes) {
  const text = new TextDecoder().decode(bytes);
  const ends = typed(endBytes, Int32Array);
  const out = new Array(ends.length);
  let start = 0;
  for (let i = 0; i < ends.length; i++) {
    out[i] = text.slice(start, ends[i]);
    start = ends[i];
  }
  return out;
}

/** {nodes, edges, hlo} of a reply's header and buffers: nodes as objects with the header's
 * columns (null for a missing string, NaN for a missing number), edges {source, target,
 * operand_index, shape} by name, hlo one line per node. */
export function decodeGraph(header, buffers) {
  const [strings, ends, textBytes, numberBytes, intBytes, edgeBytes] = buffers;
  const table = stringTable(strings, ends);
  const word = (i) => (i < 0 ? null : table[i]);
  const n = header.nodes;
  const { text: textCols, numbers: numberCols, ints: intCols } = header.columns;
  const text = typed(textBytes, Int32Array);
  const numbers = typed(numberBytes, Float64Array);
  const ints = typed(intBytes, Int32Array);
  const hloAt = textCols.indexOf("hlo");
  const hlo = new Array(n);
  const nodes = new Array(n);
  for (let r = 0; r < n; r++) {
    const node = {};
    textCols.forEach((c, j) => { if (j !== hloAt) node[c] = word(text[j * n + r]); });
    numberCols.forEach((c, j) => { node[c] = numbers[j * n + r]; });
    intCols.forEach((c, j) => { node[c] = ints[j * n + r]; });
    node.expanded = Boolean(node.expanded);
    hlo[r] = word(text[hloAt * n + r]) ?? "";
    nodes[r] = node;
  }
  const m = header.edges;
  const e = typed(edgeBytes, Int32Array);
  const nameAt = (row) => (row < 0 ? null : nodes[row].name);
  const edges = new Array(m);
  for (let i = 0; i < m; i++) {
    edges[i] = { source: nameAt(e[i]), target: nameAt(e[m + i]), operand_index: e[2 * m + i], shape: word(e[3 * m + i]) };
  }
  return { nodes, edges, hlo };
}
