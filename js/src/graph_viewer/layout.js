// The neighbourhood laid out top to bottom (as XLA's graph is read: operands above their users):
// dagre up to DAGRE_MAX nodes, expanded fusions as clusters holding their bodies; a layered layout
// of our own beyond (linear time: dagre takes seconds at 500 nodes, minutes at thousands). Pure:
// rows in, boxes out; run in a Web Worker by the view (worker.js).
import dagre from "@dagrejs/dagre";
import { boxOf } from "./labels.js";

export { boxOf, cut, labelLines } from "./labels.js";

const CLUSTER = "cluster:";
const NODESEP = 18;
const RANKSEP = 34;
const MARGIN = 12;
const CLUSTER_PAD = 10;
export const DAGRE_MAX = 400;

/** The layout for this many nodes: dagre's up to DAGRE_MAX, the layered one beyond. */
export function layout(nodes, edges, options = {}) {
  return nodes.length <= DAGRE_MAX ? layoutGraph(nodes, edges, options) : layeredLayout(nodes, edges, options);
}

/** The layered layout of the nodes within `hops` of the op (`distance` 0..hops) alone, its
 * boxes' rows those of `nodes`: what a large graph shows while all of it is laid out. */
export function previewLayout(nodes, edges, hops, options = {}) {
  const rows = [];
  nodes.forEach((node, row) => { if (node.distance >= 0 && node.distance <= hops) rows.push(row); });
  const names = new Set(rows.map((row) => nodes[row].name));
  const kept = [];
  edges.forEach((edge, i) => { if (names.has(edge.source) && names.has(edge.target)) kept.push(i); });
  const out = layeredLayout(rows.map((row) => nodes[row]), kept.map((i) => edges[i]), options);
  for (const box of [...out.nodes, ...out.clusters]) box.row = rows[box.row];
  for (const line of out.edges) line.edge = kept[line.edge];
  return out;
}

/**
 * Positions of nodes, clusters and edges: {nodes: [{row, x, y, width, height, lines}],
 * clusters: [{row, x, y, width, height}], edges: [{edge, points}], width, height}. x, y are box
 * centres, as dagre gives them.
 */
export function layoutGraph(nodes, edges, { showMetadata = false } = {}) {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 34, edgesep: 8, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const lines = new Map();
  nodes.forEach((node) => {
    if (node.expanded) {
      g.setNode(CLUSTER + node.name, { label: node.name, clusterLabelPos: "top", paddingTop: 22 });
      return;
    }
    const box = boxOf(node, showMetadata);
    lines.set(node.name, box.lines);
    g.setNode(node.name, { width: box.width, height: box.height });
  });
  nodes.forEach((node) => {
    if (node.fusion == null) return;
    g.setParent(node.expanded ? CLUSTER + node.name : node.name, CLUSTER + node.fusion);
  });
  edges.forEach((edge, i) => {
    if (g.hasNode(edge.source) && g.hasNode(edge.target)) g.setEdge(edge.source, edge.target, {}, String(i));
  });
  dagre.layout(g);
  const out = { nodes: [], clusters: [], edges: [], width: g.graph().width ?? 0, height: g.graph().height ?? 0 };
  nodes.forEach((node, row) => {
    const box = g.node(node.expanded ? CLUSTER + node.name : node.name);
    if (!box) return;
    const placed = { row, x: box.x, y: box.y, width: box.width, height: box.height };
    if (node.expanded) out.clusters.push(placed);
    else out.nodes.push({ ...placed, lines: lines.get(node.name) });
  });
  edges.forEach((edge, i) => {
    if (!g.hasNode(edge.source) || !g.hasNode(edge.target)) return;
    const e = g.edge(edge.source, edge.target, String(i));
    if (e) out.edges.push({ edge: i, points: e.points });
  });
  // A cluster holds its nested clusters: draw the outer ones first.
  out.clusters.sort((a, b) => b.width * b.height - a.width * a.height);
  return out;
}

/**
 * The layered layout of a large graph, in time linear in nodes and edges (plus a sort per rank):
 * a node's rank is its longest operand path (Kahn's order; a cycle's nodes go last), ranks are
 * ordered by one barycentre sweep down, and each node sits under its operands' mean x, pushed
 * right of its left neighbour. Edges are straight; an expanded fusion's box is its body's
 * bounding box. Same output as layoutGraph.
 */
export function layeredLayout(nodes, edges, { showMetadata = false } = {}) {
  const index = new Map();
  const boxes = [];
  nodes.forEach((node, row) => {
    if (node.expanded) return;
    index.set(node.name, boxes.length);
    boxes.push({ row, ...boxOf(node, showMetadata) });
  });
  const n = boxes.length;
  const kept = [];
  edges.forEach((edge, i) => {
    const a = index.get(edge.source);
    const b = index.get(edge.target);
    if (a !== undefined && b !== undefined && a !== b) kept.push([a, b, i]);
  });
  const outs = Array.from({ length: n }, () => []);
  const ins = Array.from({ length: n }, () => []);
  const indegree = new Int32Array(n);
  for (const [a, b] of kept) { outs[a].push(b); ins[b].push(a); indegree[b] += 1; }
  const rank = new Int32Array(n);
  const queue = [];
  for (let v = 0; v < n; v++) if (indegree[v] === 0) queue.push(v);
  for (let q = 0; q < queue.length; q++) {
    const v = queue[q];
    for (const w of outs[v]) {
      rank[w] = Math.max(rank[w], rank[v] + 1);
      if (--indegree[w] === 0) queue.push(w);
    }
  }
  if (queue.length < n) {
    let top = 0;
    for (let v = 0; v < n; v++) top = Math.max(top, rank[v]);
    for (let v = 0; v < n; v++) if (indegree[v] > 0) rank[v] = top + 1;
  }
  const ranks = [];
  for (let v = 0; v < n; v++) (ranks[rank[v]] ??= []).push(v);
  const x = new Float64Array(n);
  let y = MARGIN;
  let width = 0;
  for (const members of ranks) {
    if (!members) continue;
    const want = members.map((v) => (ins[v].length ? ins[v].reduce((sum, u) => sum + x[u], 0) / ins[v].length : -1));
    const order = members.map((v, i) => i).sort((i, j) => want[i] - want[j] || i - j);
    let right = MARGIN;
    let tallest = 0;
    for (const i of order) {
      const v = members[i];
      const half = boxes[v].width / 2;
      x[v] = Math.max(want[i], right + half);
      right = x[v] + half + NODESEP;
      tallest = Math.max(tallest, boxes[v].height);
    }
    for (const v of members) boxes[v].y = y + tallest / 2;
    width = Math.max(width, right - NODESEP + MARGIN);
    y += tallest + RANKSEP;
  }
  const out = { nodes: [], clusters: [], edges: [], width, height: y - RANKSEP + MARGIN };
  boxes.forEach((b, v) => out.nodes.push({ row: b.row, x: x[v], y: b.y, width: b.width, height: b.height, lines: b.lines }));
  for (const [a, b, i] of kept) {
    const s = out.nodes[a];
    const t = out.nodes[b];
    out.edges.push({ edge: i, points: [{ x: s.x, y: s.y + s.height / 2 }, { x: t.x, y: t.y - t.height / 2 }] });
  }
  out.clusters = clusterBoxes(nodes, out.nodes);
  return out;
}

/** Bounding boxes of expanded fusions around the nodes they hold (nested ones included). */
function clusterBoxes(nodes, placed) {
  const extent = new Map();
  const parent = new Map(nodes.map((node) => [node.name, node.fusion]));
  for (const p of placed) {
    for (let f = nodes[p.row].fusion; f != null; f = parent.get(f)) {
      const e = extent.get(f) ?? { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity };
      e.x0 = Math.min(e.x0, p.x - p.width / 2); e.x1 = Math.max(e.x1, p.x + p.width / 2);
      e.y0 = Math.min(e.y0, p.y - p.height / 2); e.y1 = Math.max(e.y1, p.y + p.height / 2);
      extent.set(f, e);
    }
  }
  const clusters = [];
  nodes.forEach((node, row) => {
    const e = node.expanded && extent.get(node.name);
    if (!e) return;
    clusters.push({ row, x: (e.x0 + e.x1) / 2, y: (e.y0 + e.y1) / 2,
      width: e.x1 - e.x0 + 2 * CLUSTER_PAD, height: e.y1 - e.y0 + 2 * CLUSTER_PAD });
  });
  return clusters.sort((a, b) => b.width * b.height - a.width * a.height);
}
