// The Distributed view's pure parts: its tables' columns are the DataFrames' (analysis/distributed.py),
// unknown bandwidths and sizes read as a dash, the tiles name the straggler only where ranks waited.
import assert from "node:assert/strict";
import { test } from "node:test";
import { KIND_COLUMNS, SKEW_COLUMNS, STRAGGLER_COLUMNS, summaryTiles } from "../src/distributed/view.js";

const PYTHON = {
  kinds: ["kind", "family", "group", "group_size", "count", "ranks", "mean_size_mib", "total_size_mib", "total_us",
    "mean_us", "wait_us", "algbw_gbps", "busbw_gbps"],
  skew: ["instance", "kind", "group", "seq", "ranks", "group_size", "complete", "first_start_us", "spread_us",
    "last_rank", "last_host", "wait_caused_us", "end_spread_us", "size_bytes", "transfer_us", "busbw_no_wait_gbps"],
  stragglers: ["rank", "host", "instances", "last_arrivals", "wait_caused_us", "wait_caused_pct", "mean_late_us",
    "waiting_us"],
};

test("every column the view shows is a column of its DataFrame", () => {
  for (const [name, columns] of [["kinds", KIND_COLUMNS], ["skew", SKEW_COLUMNS], ["stragglers", STRAGGLER_COLUMNS]]) {
    for (const c of columns) assert.ok(PYTHON[name].includes(c.key), `${name}: ${c.key}`);
  }
});

test("bandwidths and sizes: GB/s, bytes, a dash where unknown", () => {
  const busbw = KIND_COLUMNS.find((c) => c.key === "busbw_gbps");
  assert.equal(busbw.format(3.2804), "3.28 GB/s");
  assert.equal(busbw.format(null), "—");
  assert.equal(busbw.format(NaN), "—");
  const mean = KIND_COLUMNS.find((c) => c.key === "mean_size_mib");
  assert.equal(mean.format(null), "—");
  assert.equal(KIND_COLUMNS.find((c) => c.key === "group").format(""), "—");
});

test("the tiles name the worst straggler only where some rank arrived last", () => {
  const s = { ranks: 8, collectives: 64, matched: 8, mismatched: 0, communication_us: 48542, exposed_pct: 40,
    waiting_us: 46843, max_spread_us: 7624, straggler: "rank 7", straggler_pct: 75.9 };
  const tiles = summaryTiles(s);
  assert.deepEqual(tiles.map((t) => t[0]), ["Ranks", "Collective kernels", "Communication", "Waiting for late ranks",
    "Worst straggler"]);
  assert.equal(tiles[4][1], "rank 7");
  assert.match(tiles[4][2], /75\.9%/);
  assert.equal(summaryTiles({ ...s, straggler: "" }).length, 4);
  assert.match(summaryTiles({ ...s, mismatched: 3 })[1][2], /3 the ranks disagree on/);
});
