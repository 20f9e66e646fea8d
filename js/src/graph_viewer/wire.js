// The graph reply's binary columns (xprof_widgets/widgets/graph_wire.py) back into the rows the
// view and the layout read: one decode of the string table, typed arrays read in place, so a
// whole module's reply costs the page no JSON parse. Run on the page and, on the same buffers,
// in the layout's worker (no clone of the rows between them).

/** A typed view of a reply's buffer (its byteOffset a multiple of 8, as lib/transport.js gives). */
const typed = (bytes, TypedArray) => new TypedArray(bytes.buffer, bytes.byteOffset, bytes.byteLength / TypedArray.BYTES_PER_ELEMENT);

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

/** {nodes, edges, hlo} of a reply's header and buffers. A node is read where it lies: its
 * fields (the header's columns; null for a missing string, NaN for a missing number) are getters
 * on the columns, so tens of thousands of nodes cost a small object each. Edges {source, target,
 * operand_index, shape} by name; hlo: a node row's HLO line (null where the reply left it out:
 * a large graph's). */
export function decodeGraph(header, buffers) {
  const [strings, ends, textBytes, numberBytes, intBytes, edgeBytes] = buffers;
  const table = stringTable(strings, ends);
  const word = (i) => (i < 0 ? null : table[i]);
  const n = header.nodes;
  const { text: textCols, numbers: numberCols, ints: intCols } = header.columns;
  const text = typed(textBytes, Int32Array);
  const numbers = typed(numberBytes, Float64Array);
  const ints = typed(intBytes, Int32Array);
  const fields = {};
  const field = (name, read) => { fields[name] = { get() { return read(this.row); }, enumerable: true }; };
  textCols.forEach((c, j) => field(c, (r) => word(text[j * n + r])));
  numberCols.forEach((c, j) => field(c, (r) => numbers[j * n + r]));
  intCols.forEach((c, j) => field(c, (r) => ints[j * n + r]));
  field("expanded", (r) => Boolean(ints[intCols.indexOf("expanded") * n + r]));
  const hloAt = textCols.indexOf("hlo");
  delete fields.hlo;
  const Row = function Row(row) { this.row = row; };
  Object.defineProperties(Row.prototype, fields);
  const nodes = Array.from({ length: n }, (_, r) => new Row(r));
  const m = header.edges;
  const e = typed(edgeBytes, Int32Array);
  const nameAt = (row) => (row < 0 ? null : nodes[row].name);
  const edges = new Array(m);
  for (let i = 0; i < m; i++) {
    edges[i] = { source: nameAt(e[i]), target: nameAt(e[m + i]), operand_index: e[2 * m + i], shape: word(e[3 * m + i]) };
  }
  return { nodes, edges, hlo: (r) => word(text[hloAt * n + r]) };
}
