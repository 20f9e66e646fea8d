// Layout on PyTorch (Kineto) traces (issue 30 item 8): kernel names keep their function's name,
// columns no row knows are hidden, unknown occupancy reads "unknown", step axes tick whole steps,
// the timeline's height follows its handle.
import assert from "node:assert/strict";
import { test } from "node:test";
import { integerStepTicks, isStepAxis } from "../src/charts/ticks.js";
import { GPU_COLUMNS, extraColumns, labelOf, nameChars, statedPct } from "../src/kernel_stats/view.js";
import { elideMiddle, elideName, parseSignature, signatureForms } from "../src/lib/names.js";
import { isUnknown, shownColumns, toCsv } from "../src/lib/table.js";
import { MAX_STAGE_H, MIN_STAGE_H, draggedHeight } from "../src/trace_viewer/resize.js";

const ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, " +
  "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";
const BN = "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, float, " +
  "float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, float*, float const*)";
const CUTLASS = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params>" +
  "(cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)";
const ANON = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous " +
  "namespace)::TensorListMetadata<3>, std::multiplies<float>, float>(at::native::(anonymous namespace)::" +
  "TensorListMetadata<3>, float)";
const NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

test("a kernel's signature splits into return type, name, template arguments, parameters", () => {
  assert.deepEqual(parseSignature(BN), {
    ret: "void ", name: "cudnn::bn_bw_1C11_kernel_new", targs: "<float, float, float2, 512, true, 1>",
    params: BN.slice(BN.indexOf("(float")), suffix: "" });
  assert.equal(parseSignature(ANON).name, "at::native::(anonymous namespace)::multi_tensor_apply_kernel");
  assert.equal(parseSignature("model/layer_3/conv2d"), null, "plain text is no signature");
  assert.equal(parseSignature("Memcpy DtoH (Device -> Pinned)"), null);
});

test("a cut kernel name keeps its function's name; parameters and template arguments go first", () => {
  for (const [name, fn] of [[ADD, "vectorized_elementwise_kernel"], [BN, "bn_bw_1C11_kernel_new"],
    [CUTLASS, "cutlass::Kernel<cutlass_80"], [ANON, "multi_tensor_apply_kernel<TensorListMetadat"],
    [NCCL, "ncclKernel_AllReduce_RING_LL_Sum_float"]]) {
    const cut = elideName(name, 48);
    assert.ok([...cut].length <= 48, cut);
    assert.ok(cut.includes(fn), `${cut} names ${fn}`);
  }
  assert.ok(!elideMiddle(ADD, 48).includes("vectorized_elementwise_kernel"), "cut in the middle, it was lost");
  assert.equal(elideName(BN, 48), "cudnn::bn_bw_1C11_kernel_new<float, float, …>(…)");
  assert.equal(elideName(ADD, 48), "vectorized_elementwise_kernel<4, CUDAFuncto…>(…)");
  assert.equal(elideName(ADD, 80), "at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<…>, Array<…> >(…)");
  assert.equal(elideName(NCCL, 48), "ncclKernel_AllReduce_RING_LL_Sum_float(…)");
  assert.equal(elideName(BN, 500), BN, "what fits stays whole");
  assert.equal(elideName("tf_XLAEigen/-894267733742", 17), elideMiddle("tf_XLAEigen/-894267733742", 17),
    "plain text still loses its middle");
});

test("a timeline label's shorter forms all keep the function's name, shortest last", () => {
  const forms = signatureForms(ADD);
  assert.equal(forms[0], `${ADD.slice(0, ADD.indexOf("(int"))}(…)`, "the parameters go first");
  assert.ok(forms.every((f) => f.includes("vectorized_elementwise_kernel")));
  assert.ok(forms.every((f, i) => i === 0 || f.length <= forms[i - 1].length));
  assert.equal(forms.at(-1), "vectorized_elementwise_kernel<…>(…)");
  assert.equal(signatureForms("ProfilerStep#10"), null, "plain names are cut at their end as before");
});

test("an optional column shows only where some row knows it; CSV keeps every column", () => {
  const columns = [{ key: "name" }, { key: "occ", optional: true }, { key: "rate", optional: "nonzero" },
    { key: "regs", optional: "nonzero" }];
  const rows = [{ name: "a", occ: null, rate: 0, regs: 0 }, { name: "b", occ: NaN, rate: 0, regs: 32 }];
  assert.deepEqual(shownColumns(columns, rows).map((c) => c.key), ["name", "regs"]);
  assert.deepEqual(shownColumns(columns, [...rows, { occ: 0, rate: 1e3 }]).map((c) => c.key),
    ["name", "occ", "rate", "regs"], "a stated 0% occupancy is known; a rate is known once not 0");
  assert.ok(isUnknown("unknown") && isUnknown("") && !isUnknown(0) && isUnknown(0, true));
  assert.equal(toCsv(rows, ["name", "occ"]), "name,occ\r\na,\r\nb,\r\n");
});

test("Kernel Stats: occupancy not stated reads unknown, never 0%; time, then Tensor Core use, beside the name", () => {
  assert.equal(statedPct(null), "unknown");
  assert.equal(statedPct(Number.NaN), "unknown");
  assert.equal(statedPct(0), "0%");
  assert.equal(statedPct(62.5), "63%");
  const keys = GPU_COLUMNS.map((c) => c.key);
  assert.deepEqual(keys.slice(0, 10), ["rank", "kernel_name", "occurrences", "total_duration_us",
    "avg_duration_us", "min_duration_us", "max_duration_us", "is_kernel_using_tensor_core",
    "is_op_tensor_core_eligible", "op_name"]);
  assert.equal(GPU_COLUMNS.find((c) => c.key === "occupancy_pct").optional, true);
  assert.equal(GPU_COLUMNS.find((c) => c.key === "kernel_name").maxChars, 48);
  // a narrow view cuts names shorter, never below 32 characters (a function name whole); unmeasured: 48
  assert.deepEqual([nameChars(0), nameChars(650), nameChars(800), nameChars(1300)], [48, 32, 34, 48]);
});

test("Kineto-only columns of the frame are shown where known, titled and formatted by unit", () => {
  const extra = extraColumns(["rank", "kernel_name", "blocks_per_sm", "est_achieved_occupancy_pct",
    "model_flop_rate_gflops", "memory_bw_gbps", "bound_by"], GPU_COLUMNS);
  assert.deepEqual(extra.map((c) => c.label), ["Blocks per SM", "Est achieved occupancy %",
    "Model FLOP rate", "Memory BW", "Bound by"]);
  assert.ok(extra.every((c) => c.optional === "nonzero"));
  const occupancy = extra.find((c) => c.key === "est_achieved_occupancy_pct");
  assert.equal(occupancy.format(null), "unknown");
  assert.equal(extra.find((c) => c.key === "bound_by").align, "left");
  assert.equal(extra.find((c) => c.key === "model_flop_rate_gflops").format(1.5e3), "1.50 TFLOP/s");
  assert.equal(labelOf("blocks_per_sm"), "Blocks per SM");
});

// A Bokeh JSON item of one figure with a step x axis and a ms y axis (as _charts.py writes them).
const item = () => ({ doc: { roots: [{ type: "object", name: "Figure", id: "f", attributes: {
  below: [{ type: "object", name: "LinearAxis", id: "x", attributes: { axis_label: "step" } }],
  left: [{ type: "object", name: "LinearAxis", id: "y", attributes: { axis_label: "ms" } }],
  above: [{ type: "object", name: "LinearAxis", id: "c", attributes: { axis_label: "step (position in the run)" } }],
  center: [{ type: "object", name: "Grid", id: "g", attributes: { axis: { id: "x" } } }],
} }] } });

test("step axes tick whole steps only; other axes keep Bokeh's ticks", () => {
  const out = integerStepTicks(item());
  const attrs = out.doc.roots[0].attributes;
  assert.deepEqual(attrs.below[0].attributes.ticker,
    { type: "object", name: "BasicTicker", id: "x-steps", attributes: { min_interval: 1, num_minor_ticks: 0 } });
  assert.equal(attrs.above[0].attributes.ticker.attributes.min_interval, 1);
  assert.equal(attrs.left[0].attributes.ticker, undefined);
  assert.ok(!isStepAxis({ name: "LogAxis", attributes: { axis_label: "step" } }));
  assert.ok(!isStepAxis({ name: "LinearAxis", attributes: { axis_label: "steps per second" } }));
  const again = integerStepTicks(out);
  assert.equal(again.doc.roots[0].attributes.below[0].attributes.ticker.id, "x-steps", "applied once");
  assert.equal(integerStepTicks(null), null);
});

test("the timeline's height follows the drag within its bounds", () => {
  assert.equal(draggedHeight(600, 150, 2000), 750);
  assert.equal(draggedHeight(600, -1000, 2000), MIN_STAGE_H);
  assert.equal(draggedHeight(600, 900, 1000), 1000, "no taller than the rows");
  assert.equal(draggedHeight(600, 1e6, 1e6), MAX_STAGE_H);
  assert.equal(draggedHeight(300, 50, 80), MIN_STAGE_H, "a short trace still gets the least height");
});
