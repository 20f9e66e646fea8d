// Pie legends (issue 30 item 8): a kernel's name keeps its function, cut as the tables cut it;
// the full name and time are the entry's title.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LEGEND_CHARS, legendEntries } from "../src/charts/pie_legend.js";
import { elideName } from "../src/lib/names.js";

const GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>("
  + "cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)";
const ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, "
  + "at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<float>, at::detail::Array<char*, 2>)";

test("a kernel's legend entry keeps its function's name, not the end of its parameters", () => {
  const [gemm, add, other] = legendEntries([
    { name: GEMM, share: "41.0%", value: "1,000.000 µs", color: "#1f77b4" },
    { name: ADD, share: "9.0%", value: "220.000 µs", color: "#ff7f0e" },
    { name: "(other)", share: "50.0%", value: "1,220.000 µs", color: "#c7c7c7" },
  ]);
  assert.equal(gemm.text, "cutlass::Kernel2<cutlass_80_tensoro…>(…) (41.0%)");
  assert.equal(gemm.text, `${elideName(GEMM, LEGEND_CHARS)} (41.0%)`); // the table's cut
  assert.match(add.text, /^vectorized_elementwise_kernel<4, /);
  assert.ok([...add.text.replace(/ \(9\.0%\)$/, "")].length <= LEGEND_CHARS);
  assert.equal(add.title, `${ADD}\n220.000 µs (9.0%)`);
  assert.equal(other.text, "(other) (50.0%)");
  assert.equal(other.color, "#c7c7c7");
});

test("plain names lose their middle as in the tables", () => {
  const name = `model/${"layer/".repeat(12)}MatMul`;
  const [entry] = legendEntries([{ name, share: "1.0%", value: "1 µs", color: "#000" }], 20);
  assert.equal(entry.text, "model/laye…er/MatMul (1.0%)");
});

test("a DataLoader's step keeps its iterator, not only 'enumerate(…)'", () => {
  const name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  const [entry] = legendEntries([{ name, share: "13.8%", value: "1 µs", color: "#000" }]);
  assert.equal(entry.text, `${elideName(name, LEGEND_CHARS)} (13.8%)`);
  assert.equal(entry.text, "enumerate(DataLoader…LoaderIter.__next__ (13.8%)");
});
