// Cell formats the HLO-level tables share (HLO stats, roofline): rates and bandwidths arrive in
// GFLOP/s and GB/s (the DataFrame's units) and print with an SI prefix.
import * as fmt from "./format.js";

export const rate = (v) => (v ? fmt.si(v * 1e9, "FLOP/s") : "0");
export const bandwidth = (v) => (v ? fmt.si(v * 1e9, "B/s") : "0");
export const ratio = (v) => (v === null || v === undefined ? fmt.DASH : v === 0 ? "0" : fmt.sig3(v));
export const pct = (v) => fmt.pct(v, 2);
export const fraction = (v) => fmt.percent(v);

const ON_CHIP = { cmem_read: "CMEM rd BW", cmem_write: "CMEM wr BW", vmem_read: "VMEM rd BW", vmem_write: "VMEM wr BW" };

/** Bandwidth columns of the on-chip memories the device states peaks for (summary.on_chip). */
export function onChipColumns(memories) {
  return (memories ?? []).map((m) => ({ key: `${m}_bw_gbps`, label: ON_CHIP[m], format: bandwidth }));
}
