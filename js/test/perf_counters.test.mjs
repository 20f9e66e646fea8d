// The perf counters and pod viewer views' pure parts: values in decimal and hex, table columns.
import assert from "node:assert/strict";
import { test } from "node:test";
import { COLUMNS, decHex } from "../src/perf_counters/view.js";
import { tableColumns } from "../src/pod_viewer/view.js";

test("counter values in decimal and hex, exactly for large ones", () => {
  assert.equal(decHex(253828), "253,828 · 0x3df84");
  assert.equal(decHex(0), "0 · 0x0");
  assert.equal(decHex(2 ** 52 + 1), "4,503,599,627,370,497 · 0x10000000000001");
  assert.equal(decHex(null), "—");
});

test("the perf counters table has XProf's columns under the DataFrame's keys", () => {
  assert.deepEqual(COLUMNS.map((c) => c.key),
    ["host", "chip", "kernel", "sample", "counter", "value", "description", "set"]);
  assert.deepEqual(COLUMNS.filter((c) => c.facet).map((c) => c.key), ["host", "chip", "kernel", "sample", "set"]);
});

test("the pod viewer's table: step, where, time, every part, bottleneck, straggler", () => {
  const parts = [{ key: "compute_us", label: "Device compute" }, { key: "other_us", label: "All others" }];
  const columns = tableColumns(parts);
  assert.deepEqual(columns.map((c) => c.key), ["step", "host", "core", "duration_us", "compute_us", "other_us",
    "bottleneck", "step_median_us", "straggler"]);
  const straggler = columns.find((c) => c.key === "straggler");
  assert.equal(straggler.format(true), "straggler");
  assert.equal(straggler.format(false), "");
});
