// Framework Op Stats' cost columns: shown where some row has a cost, hidden where the whole
// table has none (a PyTorch trace without shapes: every rate 0, every bound "Unknown").
import assert from "node:assert/strict";
import { test } from "node:test";
import { COLUMNS } from "../src/framework_op_stats/view.js";
import { shownColumns } from "../src/lib/table.js";

const COST = ["measured_flop_rate_gflops", "model_flop_rate_gflops", "measured_memory_bw_gbps",
  "operational_intensity", "bound_by"];
const row = (rate, bound) => ({ measured_flop_rate_gflops: rate, model_flop_rate_gflops: rate,
  measured_memory_bw_gbps: rate, operational_intensity: rate, bound_by: bound, operation: "aten::mm" });
const shown = (rows) => new Set(shownColumns(COLUMNS, rows).map((c) => c.key));

test("no cost anywhere: the cost columns are hidden", () => {
  const keys = shown([row(0, "Unknown"), row(0, "Unknown")]);
  for (const key of COST) assert.ok(!keys.has(key), key);
  assert.ok(keys.has("operation"));
});

test("one row with a cost shows them all", () => {
  const keys = shown([row(0, "Unknown"), row(2.5, "HBM")]);
  for (const key of COST) assert.ok(keys.has(key), key);
});
