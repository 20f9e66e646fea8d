// The selection pivot's tree: rows folded by the chosen levels, sums per node, largest first.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pivotTree } from "../src/trace_viewer/pivot.js";

const ROWS = [
  { section: "/host:CPU", track: 0, track_name: "python", name: "load", count: 2, total_us: 30, self_us: 30 },
  { section: "/host:CPU", track: 0, track_name: "python", name: "train", count: 2, total_us: 100, self_us: 40 },
  { section: "/host:CPU", track: 3, track_name: "worker", name: "load", count: 1, total_us: 5, self_us: 5 },
  { section: "/device:TPU:0", track: 7, track_name: "XLA Ops", name: "fusion", count: 10, total_us: 50, self_us: 50 },
];

test("the pivot nests section, track and name with their sums", () => {
  const tree = pivotTree(ROWS, ["section", "track", "name"]);
  assert.deepEqual(tree.map((n) => [n.label, n.count, n.total, n.self]),
    [["/host:CPU", 5, 135, 75], ["/device:TPU:0", 10, 50, 50]]);
  const [python, worker] = tree[0].children;
  assert.equal(python.label, "python");
  assert.deepEqual(python.children.map((n) => [n.label, n.leaf]), [["train", true], ["load", true]]);
  assert.equal(worker.children[0].total, 5);
  assert.equal(tree[0].leaf, false);
});

test("grouping by name alone adds up a name over every track", () => {
  const tree = pivotTree(ROWS, ["name"]);
  assert.deepEqual(tree.map((n) => [n.label, n.count, n.total]), [["train", 2, 100], ["fusion", 10, 50], ["load", 3, 35]]);
  assert.ok(tree.every((n) => n.leaf && n.children.length === 0));
});
