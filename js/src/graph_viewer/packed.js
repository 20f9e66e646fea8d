// A layout as typed arrays between the worker and the page: the structured clone of tens of
// thousands of small objects took the page's thread 150-300 ms each way on a whole module, typed
// arrays are transferred without a copy. The page rebuilds the objects the view reads in one
// pass (label lines it makes from the node's row, when it draws the node).

function packBoxes(boxes) {
  const rows = new Int32Array(boxes.length);
  const geometry = new Float64Array(4 * boxes.length);
  boxes.forEach((b, i) => {
    rows[i] = b.row;
    geometry.set([b.x, b.y, b.width, b.height], 4 * i);
  });
  return { rows, geometry };
}

/** {message, transfer} of a layout (layout.js's shape, without the label lines). */
export function packLayout(out) {
  const nodes = packBoxes(out.nodes);
  const clusters = packBoxes(out.clusters);
  const edges = new Int32Array(out.edges.length);
  const ends = new Int32Array(out.edges.length);
  let total = 0;
  out.edges.forEach((e, i) => { edges[i] = e.edge; total += e.points.length; ends[i] = total; });
  const points = new Float64Array(2 * total);
  let at = 0;
  for (const e of out.edges) for (const p of e.points) { points[at++] = p.x; points[at++] = p.y; }
  const message = { nodes, clusters, edges, ends, points, width: out.width, height: out.height };
  const transfer = [nodes.rows, nodes.geometry, clusters.rows, clusters.geometry, edges, ends, points].map((a) => a.buffer);
  return { message, transfer };
}

function unpackBoxes({ rows, geometry }) {
  return Array.from(rows, (row, i) => ({ row, x: geometry[4 * i], y: geometry[4 * i + 1],
    width: geometry[4 * i + 2], height: geometry[4 * i + 3] }));
}

/** The layout back as objects: nodes and clusters {row, x, y, width, height}, edges {edge,
 * points}. */
export function unpackLayout(packed) {
  const { ends, points } = packed;
  const edges = Array.from(packed.edges, (edge, i) => {
    const line = [];
    for (let j = i ? ends[i - 1] : 0; j < ends[i]; j++) line.push({ x: points[2 * j], y: points[2 * j + 1] });
    return { edge, points: line };
  });
  return { nodes: unpackBoxes(packed.nodes), clusters: unpackBoxes(packed.clusters), edges, width: packed.width, height: packed.height };
}
