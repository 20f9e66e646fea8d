// The peak summary: peak with and without padding, its split by allocation type, the padding
// overhead and the instruction at the peak.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { TYPE_COLORS } from "./colors.js";

function tile(label, value, sub, color) {
  return h("div", { className: "xw-mv-tile" },
    h("span", { className: "xw-mv-tile-label" },
      color ? h("span", { className: "xw-mv-swatch", style: { background: color } }) : null, label),
    h("span", { className: "xw-mv-tile-value" }, value),
    sub ? h("span", { className: "xw-mv-tile-sub" }, sub) : null);
}

function share(part, whole) {
  return whole ? `${fmt.percent(part / whole)} of peak` : null;
}

/** The summary section's children for a `view` answer's summary. */
export function summaryContent(s) {
  const peak = s.peak_bytes;
  const tiles = h("div", { className: "xw-mv-tiles" },
    tile("Peak memory", fmt.bytes(peak), `${fmt.count(peak)} bytes`),
    tile("Without padding", fmt.bytes(s.peak_unpadded_bytes), `${fmt.count(s.peak_unpadded_bytes)} bytes`),
    tile("Padding overhead", fmt.bytes(s.padding_bytes), `${fmt.percent(s.padding_pct / 100)} of peak`),
    tile("Parameters", fmt.bytes(s.parameters_bytes), share(s.parameters_bytes, peak), TYPE_COLORS.parameter),
    tile("Temporaries", fmt.bytes(s.temporaries_bytes), share(s.temporaries_bytes, peak), TYPE_COLORS.temporary),
    tile("Outputs (live-out)", fmt.bytes(s.outputs_bytes), share(s.outputs_bytes, peak), TYPE_COLORS.output),
    tile("Constants", fmt.bytes(s.constants_bytes), share(s.constants_bytes, peak), TYPE_COLORS.constant));
  const where = s.peak_program_order === null
    ? h("div", { className: "xw-mv-peak" },
      `No heap-simulator step allocates in ${s.memory_space}: the peak is the memory of parameters, `
      + "outputs and constants, live for the whole program.")
    : h("div", { className: "xw-mv-peak" }, "Peak at program order ",
      h("b", {}, fmt.count(s.peak_program_order)), ` of ${fmt.count(s.program_steps)} heap-simulator steps, `
      + "in instruction ", h("code", {}, s.peak_instruction ?? "—"), ".");
  return [tiles, where];
}
