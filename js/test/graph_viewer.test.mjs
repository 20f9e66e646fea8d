// The Graph Viewer's layout: operands above users, fusion bodies inside their clusters.
import assert from "node:assert/strict";
import { test } from "node:test";
import { shareFill } from "../src/graph_viewer/fill.js";
import { DAGRE_MAX, cut, layeredLayout, layout, layoutGraph, previewLayout } from "../src/graph_viewer/layout.js";
import { packLayout, unpackLayout } from "../src/graph_viewer/packed.js";
import { decodeGraph } from "../src/graph_viewer/wire.js";

/** Rows of columns ({name: [...], opcode: [...]}) as objects. */
function rowsOf(columns) {
  const keys = Object.keys(columns);
  return columns[keys[0]].map((_, i) => Object.fromEntries(keys.map((k) => [k, columns[k][i]])));
}

const bytesOf = (array) => new Uint8Array(array.buffer);

const NODES = rowsOf({
  name: ["p0", "fusion.1", "param_0.1", "exp.1", "add.2"],
  opcode: ["parameter", "fusion", "parameter", "exponential", "add"],
  shape: ["f32[8]", "f32[8]", "f32[8]", "f32[8]", "f32[8]"],
  fusion: [null, null, "fusion.1", "fusion.1", null],
  expanded: [false, true, false, false, false],
  time_share: [null, 0.5, null, null, 0.01],
});
const EDGES = rowsOf({ source: ["p0", "param_0.1", "exp.1"], target: ["param_0.1", "exp.1", "add.2"],
  operand_index: [0, 0, 0], shape: ["f32[8]", "f32[8]", "f32[8]"] });

test("operands sit above their users and fused instructions inside their fusion's cluster", () => {
  const out = layoutGraph(NODES, EDGES);
  const at = Object.fromEntries(out.nodes.map((n) => [NODES[n.row].name, n]));
  assert.deepEqual(Object.keys(at).sort(), ["add.2", "exp.1", "p0", "param_0.1"]);
  assert.ok(at.p0.y < at["param_0.1"].y && at["param_0.1"].y < at["exp.1"].y && at["exp.1"].y < at["add.2"].y);
  assert.equal(out.clusters.length, 1);
  const c = out.clusters[0];
  assert.equal(NODES[c.row].name, "fusion.1");
  for (const name of ["param_0.1", "exp.1"]) {
    const n = at[name];
    assert.ok(Math.abs(n.x - c.x) <= (c.width - n.width) / 2 + 0.5, name);
    assert.ok(Math.abs(n.y - c.y) <= (c.height - n.height) / 2 + 0.5, name);
  }
  assert.ok(at["add.2"].y - at["add.2"].height / 2 >= c.y + c.height / 2, "add.2 lies below the cluster");
  assert.equal(out.edges.length, 3);
  assert.ok(out.width > 0 && out.height > 0);
});

test("fills go from the background to red by share; untimed nodes get none", () => {
  assert.equal(shareFill(0), "#ffffff");
  assert.equal(shareFill(1), "#ff0000");
  assert.equal(shareFill(0, "#111111"), "#111111");
  assert.equal(shareFill(0.25, "rgb(0, 0, 0)"), "#800000");
  assert.equal(shareFill(null), null);
  assert.equal(cut("abcdef", 4), "abc…");
});

test("the layered layout of a large graph: operands above users, no two boxes of a rank overlap", () => {
  // A chain of 300 two-operand adds fed by 300 parameters: 600 nodes, past dagre's share.
  const names = [];
  const source = [];
  const target = [];
  for (let i = 0; i < 300; i++) {
    names.push(`p${i}`, `add.${i}`);
    source.push(`p${i}`);
    target.push(`add.${i}`);
    if (i) { source.push(`add.${i - 1}`); target.push(`add.${i}`); }
  }
  const nodes = rowsOf({ name: names, opcode: names.map((n) => (n[0] === "p" ? "parameter" : "add")),
    shape: names.map(() => "f32[8]"), fusion: names.map(() => null), expanded: names.map(() => false) });
  const edges = rowsOf({ source, target, operand_index: source.map(() => 0), shape: source.map(() => "f32[8]") });
  assert.ok(nodes.length > DAGRE_MAX);
  const out = layout(nodes, edges);
  assert.equal(out.nodes.length, 600);
  assert.equal(out.edges.length, edges.length);
  const at = new Map(out.nodes.map((n) => [nodes[n.row].name, n]));
  for (let i = 0; i < edges.length; i++) {
    const s = at.get(edges[i].source);
    const t = at.get(edges[i].target);
    assert.ok(s.y + s.height / 2 < t.y - t.height / 2, `${edges[i].source} above ${edges[i].target}`);
  }
  const rows = new Map();
  for (const n of out.nodes) (rows.get(n.y) ?? rows.set(n.y, []).get(n.y)).push(n);
  for (const row of rows.values()) {
    row.sort((a, b) => a.x - b.x);
    for (let i = 1; i < row.length; i++) assert.ok(row[i - 1].x + row[i - 1].width / 2 < row[i].x - row[i].width / 2);
  }
  assert.ok(out.nodes.every((n) => n.x - n.width / 2 >= 0 && n.x + n.width / 2 <= out.width));
  assert.ok(out.nodes.every((n) => n.y + n.height / 2 <= out.height));
});

test("in the layered layout an expanded fusion's box holds its body", () => {
  const out = layeredLayout(NODES, EDGES);
  assert.equal(out.clusters.length, 1);
  const c = out.clusters[0];
  for (const n of out.nodes.filter((b) => NODES[b.row].fusion === "fusion.1")) {
    assert.ok(Math.abs(n.x - c.x) <= (c.width - n.width) / 2 && Math.abs(n.y - c.y) <= (c.height - n.height) / 2);
  }
});

test("the binary reply decodes to rows: strings by table index, UTF-16 ends, NaN and null kept", () => {
  const table = ["a.1", "add", "f32[]", "π.py:3", "\u{1d70b}", "%a.1 = add()"];
  const ends = new Int32Array(table.reduce((acc, t) => [...acc, (acc.at(-1) ?? 0) + t.length], []));
  const header = { nodes: 1, edges: 1, columns: { text: ["name", "opcode", "shape", "fusion", "source", "op_name", "hlo"],
    numbers: ["time_us", "time_share"], ints: ["distance", "expanded"] } };
  const buffers = [new TextEncoder().encode(table.join("")), bytesOf(ends), bytesOf(new Int32Array([0, 1, 2, -1, 3, 4, 5])),
    bytesOf(new Float64Array([2.5, NaN])), bytesOf(new Int32Array([0, 1])), bytesOf(new Int32Array([0, 0, 1, 2]))];
  const { nodes, edges, hlo } = decodeGraph(header, buffers);
  const fields = ["name", "opcode", "shape", "fusion", "source", "op_name", "time_us", "time_share", "distance", "expanded"];
  assert.deepEqual(nodes.map((node) => Object.fromEntries(fields.map((f) => [f, node[f]]))), [{ name: "a.1", opcode: "add", shape: "f32[]", fusion: null, source: "π.py:3",
    op_name: "\u{1d70b}", time_us: 2.5, time_share: NaN, distance: 0, expanded: true }]);
  assert.equal(hlo(0), "%a.1 = add()");
  assert.deepEqual(edges, [{ source: "a.1", target: "a.1", operand_index: 1, shape: "f32[]" }]);
});

test("a layout packed into typed arrays (worker to page) unpacks to the same boxes, edges and labels", () => {
  const out = layoutGraph(NODES, EDGES);
  const { message, transfer } = packLayout(out);
  assert.ok(transfer.every((b) => b instanceof ArrayBuffer));
  const withoutLines = { ...out, nodes: out.nodes.map(({ lines, ...box }) => box) };
  assert.deepEqual(unpackLayout(structuredClone(message, { transfer })), withoutLines);
});

test("a large graph's preview lays out the op's neighbourhood alone, with the whole graph's rows and edge indices", () => {
  const names = Array.from({ length: 8 }, (_, i) => `n${i}`);
  const nodes = rowsOf({ name: names, opcode: names.map(() => "add"), shape: names.map(() => "f32[]"),
    fusion: names.map(() => null), expanded: names.map(() => false), distance: [3, 2, 1, 0, 1, 2, 4, -1] });
  const edges = rowsOf({ source: names.slice(0, 7), target: names.slice(1), operand_index: names.slice(1).map(() => 0),
    shape: names.slice(1).map(() => "f32[]") });
  const out = previewLayout(nodes, edges, 3);
  assert.deepEqual(out.nodes.map((n) => n.row), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(out.edges.map((e) => e.edge), [0, 1, 2, 3, 4]);
  const y = Object.fromEntries(out.nodes.map((n) => [n.row, n.y]));
  assert.ok(y[0] < y[1] && y[1] < y[3] && y[3] < y[5]);
});
