// The utilization viewer and megascale stats views' pure parts: columns under the DataFrames'
// keys, amounts in their unit, milliseconds read at the scale they have.
import assert from "node:assert/strict";
import { test } from "node:test";
import { COLUMNS as UTILIZATION, amount } from "../src/utilization_viewer/view.js";
import { COLUMNS as MEGASCALE, ms } from "../src/megascale_stats/view.js";

test("the utilization table has XProf's columns and ours under the DataFrame's keys", () => {
  assert.deepEqual(UTILIZATION.map((c) => c.key),
    ["host", "device", "sample", "node", "name", "achieved", "peak", "unit", "utilization"]);
  assert.deepEqual(UTILIZATION.filter((c) => c.facet).map((c) => c.key), ["host", "device", "sample", "node", "unit"]);
});

test("achieved and peak read in their unit: bytes as bytes, the rest as counts", () => {
  assert.equal(amount(1572864, { unit: "bytes" }), "1.50 MiB");
  assert.equal(amount(17500000, { unit: "cycles" }), "17,500,000");
  assert.equal(amount(null, { unit: "bytes" }), "—");
});

test("the megascale table has XProf's columns under the DataFrame's keys", () => {
  assert.deepEqual(MEGASCALE.map((c) => c.key), ["host", "rendezvous", "recv_op_name", "send_op_name",
    "transfer_type", "slack_time_ms", "host_stall_ms", "observed_duration_ms", "send_stall_ms",
    "send_done_stall_ms", "recv_stall_ms", "recv_done_stall_ms", "stall_duration_ms", "total_stall_ms",
    "occurrences", "bytes_transmitted", "required_bandwidth_gbps"]);
});

test("milliseconds at their scale, a missing host stall as a dash", () => {
  assert.equal(ms(1.139), "1.139 ms");
  assert.equal(ms(0.003), "3.000 µs");
  assert.equal(ms(null), "—");
});
