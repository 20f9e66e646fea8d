// The detail card of one op: what it is (HLO text, shape and layout, padding), where it came
// from (framework op, source line and stack) and how well it used the device.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { ratio } from "./table.js";

function bar(value) {
  if (value === null || value === undefined) return null;
  return h("div", { className: "xw-op-bar" }, h("div", { style: {
    width: `${Math.max(0, Math.min(1, value)) * 100}%`, background: fmt.utilizationColor(value).replace("0.30", "0.9"),
  } }));
}

function util(value, hasPeaks) {
  if (value === null || value === undefined) return hasPeaks ? "—" : "no peak known";
  return [fmt.percent(value), bar(value)];
}

/** The op's time; where the trace's event spans total otherwise (a TPU op timed by the device's
 * own `device_duration_ps`), both, each saying what it is: the Trace Viewer's selection sums spans. */
function timeRows(d) {
  const runs = `${fmt.time(d.time_us)} in ${fmt.count(d.occurrences)} runs (avg ${fmt.time(d.avg_time_us)})`;
  const span = d.span_time_us;
  if (span === null || span === undefined || Math.abs(span - d.time_us) <= 1e-3 * Math.max(span, d.time_us)) {
    return [["Time", runs]];
  }
  const avg = d.occurrences ? ` (avg ${fmt.time(span / d.occurrences)})` : "";
  return [
    [h("span", { title: "The device's own measure of the op (device_duration_ps): what the op table sums" }, "Device time"), runs],
    [h("span", { title: "The op's events as drawn on the timeline: what the Trace Viewer's selection totals" }, "Trace spans"),
      `${fmt.time(span)}${avg}`],
  ];
}

/** The card's content for a `details` answer; onClose unpins it. */
export function cardContent(d, pinned, onClose, link = null) {
  const rows = [
    ["Category", d.category],
    ["Program", d.program],
    ...timeRows(d),
    ["FLOPS util", util(d.flops_utilization, d.has_peaks)],
    ["BW util", util(d.bandwidth_utilization, d.has_peaks)],  // the table's name for it
    ["FLOP rate", fmt.si(d.flop_rate, "FLOP/s")],
    ["Bandwidth", d.bandwidth_gbps === null ? "—" : `${d.bandwidth_gbps.toFixed(2)} GB/s`],
    ["FLOP/byte", ratio(d.arithmetic_intensity)],
    ["Bound by", d.bound_by || "—"],
    ["Framework op", d.framework_op || "—"],
    ["Source", d.source || "—"],
  ];
  const shape = [];
  if (d.shape) {
    shape.push(h("div", { className: "xw-op-card-section" }, "Shape and layout"), h("pre", {}, d.shape));
    if (d.padding_bytes > 0) {
      const share = d.padding_bytes / (d.unpadded_bytes + d.padding_bytes);
      shape.push(h("div", {}, `Tiles pad it to ${d.padded_shape}: ${fmt.bytes(d.padding_bytes)} of padding `
        + `(${fmt.percent(share)} of ${fmt.bytes(d.unpadded_bytes + d.padding_bytes)}).`));
    } else {
      shape.push(h("div", { className: "xw-op-muted" }, "No padding from tiling."));
    }
  }
  return [
    h("div", { className: "xw-op-card-title" }, h("span", {}, d.name), link,
      pinned ? h("button", { className: "xw-op-card-close", title: "unpin", onclick: onClose }, "×") : null),
    h("dl", {}, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("div", { className: "xw-op-card-section" }, "HLO"),
    h("pre", { className: "xw-op-expression" }, d.expression || d.name),
    ...shape,
    d.source_stack ? [h("div", { className: "xw-op-card-section" }, "Stack"), h("pre", {}, d.source_stack)] : null,
  ];
}
