// Cell formats the HLO-level tables share (HLO stats, roofline): rates and bandwidths arrive in
// GFLOP/s and GB/s (the DataFrame's units) and print with an SI prefix.
import * as fmt from "./format.js";

export const rate = (v) => (v ? fmt.si(v * 1e9, "FLOP/s") : "0");
export const bandwidth = (v) => (v ? fmt.si(v * 1e9, "B/s") : "0");
export const ratio = (v) => (v === null || v === undefined ? fmt.DASH : v === 0 ? "0" : fmt.sig3(v));
export const pct = (v) => fmt.pct(v, 2);
export const fraction = (v) => fmt.percent(v);
