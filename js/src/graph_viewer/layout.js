// The neighbourhood laid out top to bottom with dagre (as XLA's graph is read: operands above
// their users), expanded fusions as clusters holding their bodies. Pure: columns in, boxes out.
import dagre from "@dagrejs/dagre";

const CHAR_W = 6.4; // px per character of the 11px label font, a little generous
const LINE_H = 14;
const PAD = 8;
const SHAPE_CHARS = 44; // a tuple's shape can be thousands of characters: labels cut it
const CLUSTER = "cluster:";

/** Text lines of a node's label: name, opcode, shape, and with metadata op name and source. */
export function labelLines(node, showMetadata) {
  const lines = [node.name, node.opcode, cut(node.shape, SHAPE_CHARS)];
  if (showMetadata) {
    if (node.op_name) lines.push(cut(node.op_name, SHAPE_CHARS));
    if (node.source) lines.push(cut(node.source, SHAPE_CHARS));
  }
  return lines;
}

export function cut(text, n) {
  const s = String(text ?? "");
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** Rows of a columnar answer ({name: [...], opcode: [...]}) as objects. */
export function rowsOf(columns) {
  const keys = Object.keys(columns ?? {});
  const n = keys.length ? columns[keys[0]].length : 0;
  return Array.from({ length: n }, (_, i) => Object.fromEntries(keys.map((k) => [k, columns[k][i]])));
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
    const text = labelLines(node, showMetadata);
    lines.set(node.name, text);
    const width = Math.max(...text.map((t) => t.length)) * CHAR_W + 2 * PAD;
    g.setNode(node.name, { width, height: text.length * LINE_H + PAD });
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

/** A node's fill by its share of device time: the page's background (none) to red (all), so a
 * dark theme stays dark; null when the profile has no time for it. `base` is "#rrggbb". */
export function shareFill(share, base = "#ffffff") {
  if (share === null || share === undefined || !Number.isFinite(share)) return null;
  const t = Math.sqrt(Math.min(1, Math.max(0, share)));
  const rgb = parseHex(base);
  const mix = [255, 0, 0].map((red, i) => Math.round(rgb[i] + (red - rgb[i]) * t));
  return `#${mix.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

/** [r, g, b] of "#rgb", "#rrggbb" or "rgb(r, g, b)"; white for anything else. */
export function parseHex(color) {
  const c = String(color).trim();
  const rgb = c.match(/^rgba?\((\d+)\D+(\d+)\D+(\d+)/);
  if (rgb) return rgb.slice(1, 4).map(Number);
  const hex = c.match(/^#([0-9a-f]{3}|[0-9a-f]{6})$/i);
  if (!hex) return [255, 255, 255];
  const digits = hex[1].length === 3 ? [...hex[1]].map((d) => d + d) : hex[1].match(/../g);
  return digits.map((d) => parseInt(d, 16));
}
