// The timeline's snapshots as the kernel sends them (binary columns), and the pure questions the
// view asks of them: which snapshot holds at a time, what a card says about one.
import * as fmt from "../lib/format.js";
import { typed } from "../lib/transport.js";

const FLOATS = ["time_us", "stack", "heap", "free", "fragmentation", "requested", "allocated"];
const INTS = ["step", "event"];
const TEXTS = ["activity", "op_name", "region_type", "data_type", "shape"];

/** The `view` answer's buffers as named columns: floats, ints, then one code column per text;
 * then a PyTorch trace's `extra` columns (timeline.extra: its floats, then its texts' codes). */
export function decodeSnapshots(buffers, texts, extra = { floats: [], texts: [] }) {
  const out = {};
  let at = 0;
  const floats = (keys) => keys.forEach((key) => { out[key] = typed(buffers[at++], Float64Array); });
  const coded = (keys) => keys.forEach((key) => {
    const names = texts[key];
    out[key] = Array.from(typed(buffers[at++], Int32Array), (k) => names[k]);
  });
  floats(FLOATS);
  INTS.forEach((key) => { out[key] = typed(buffers[at++], Int32Array); });
  coded(TEXTS);
  floats(extra.floats);
  coded(extra.texts);
  return out;
}

/** An address as hex (`0x7f...`), as allocators and PyTorch print them. */
export function hexAddress(address) {
  return address > 0 ? `0x${Math.round(address).toString(16)}` : fmt.DASH;
}

/** Index of the snapshot that holds at `timeUs`: the last at or before it (the first before any). */
export function snapshotAt(times, timeUs) {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] <= timeUs) lo = mid + 1;
    else hi = mid;
  }
  return Math.max(0, lo - 1);
}

/** [label, text] rows of a snapshot's card, as XProf's tooltip lists them (sizes arrive in the
 * chart's unit, `scale` bytes each); a PyTorch trace's `[memory]` event ("kineto") lists what
 * it carries instead. */
export function snapshotRows(s, i, scale, kind = "allocator") {
  const size = (v) => fmt.bytes(Math.round(v * scale));
  const step = s.step[i];
  if (kind === "kineto") {
    return [
      ["Time", fmt.time(s.time_us[i])],
      ["Event", s.activity[i] === "allocation" ? "allocation" : "free"],
      ["Size", fmt.bytes(s.allocated[i])],
      ["Address", hexAddress(s.address[i])],
      ["Allocated by", s.op_name[i] || fmt.DASH],
      ["In op", s.cpu_op[i] || fmt.DASH],
      ["Thread", s.thread[i] || fmt.DASH],
      ["Step", step < 0 ? "no steps marked" : String(step)],
      ["Allocated", size(s.heap[i])],
      ["Reserved", Number.isNaN(s.reserved_bytes[i]) ? "unknown (not in the trace)" : size(s.reserved_bytes[i])],
    ];
  }
  return [
    ["Time", fmt.time(s.time_us[i])],
    ["Event", s.activity[i]],
    ["Op", s.op_name[i] || fmt.DASH],
    ["Requested", fmt.bytes(s.requested[i])],
    ["Allocated", fmt.bytes(s.allocated[i])],
    ["Step", step < 0 ? "no steps marked" : String(step)],
    ["Region", s.region_type[i] || fmt.DASH],
    ["Data type", s.data_type[i] && s.data_type[i] !== "INVALID" ? s.data_type[i] : fmt.DASH],
    ["Shape", s.shape[i] || fmt.DASH],
    ["In use", `${size(s.stack[i] + s.heap[i])} (stack ${size(s.stack[i])}, heap ${size(s.heap[i])})`],
    ["Free", size(s.free[i])],
    ["Fragmentation", fmt.pct(s.fragmentation[i], 2)],
  ];
}
