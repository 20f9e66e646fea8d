// Kernel Stats' TensorCore cells and tile (issue 30 item 5): null (the kernel's name does not say,
// on Kineto traces) reads "unknown", never "no"; the tile's share is of the known time.
import assert from "node:assert/strict";
import { test } from "node:test";
import { tensorCore, tensorCoreTile } from "../src/kernel_stats/view.js";

test("a kernel whose TensorCore use is unknown reads unknown", () => {
  assert.equal(tensorCore(null), "unknown");
  assert.equal(tensorCore(undefined), "unknown");
  assert.equal(tensorCore(true), "yes");
  assert.equal(tensorCore(false), "no");
});

test("the tile says its share is of the known time where some is unknown", () => {
  const [label, value, title] = tensorCoreTile({ tensor_core_share: 0.5, tensor_core_known_share: 0.8 });
  assert.equal(label, "TensorCore kernels (of known)");
  assert.equal(value, "50.0%");
  assert.match(title, /80\.0% of all kernel time/);
  const [plain] = tensorCoreTile({ tensor_core_share: 0.5, tensor_core_known_share: 1 });
  assert.equal(plain, "TensorCore kernels");
});

test("a facet with facetNull offers and keeps the rows whose value is missing", async () => {
  const { facetText, filterRows } = await import("../src/lib/table.js");
  const rows = [{ k: "a", tc: true }, { k: "b", tc: null }, { k: "c", tc: false }];
  assert.equal(facetText(null, "unknown"), "unknown");
  assert.equal(facetText(null), "");
  assert.equal(facetText(true, "unknown"), "true");
  assert.deepEqual(filterRows(rows, ["k"], "", { tc: "unknown" }, { tc: "unknown" }).map((r) => r.k), ["b"]);
  assert.deepEqual(filterRows(rows, ["k"], "", { tc: "true" }, { tc: "unknown" }).map((r) => r.k), ["a"]);
  assert.deepEqual(filterRows(rows, ["k"], "", { tc: "true" }).map((r) => r.k), ["a"]);
});
