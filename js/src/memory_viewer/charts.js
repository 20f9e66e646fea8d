// The four Bokeh charts: the memory curve (with the peak line and a hovered buffer's lifetime)
// and the buffers at the peak in three orders. Their templates are embedded once; each module
// only replaces the data sources' columns, so a switch costs no Bokeh document rebuild. Hover
// and tap on the bars are read from the sources (`inspect` signal, `selected` indices).
import { embedItem } from "../charts/bokeh.js";
import { typed } from "../lib/transport.js";
import * as fmt from "../lib/format.js";
import { typeColor } from "./colors.js";

export const BAR_KEYS = ["program", "size", "padding"];

export class Charts {
  /** containers: {curve, program, size, padding} elements; on: {hover(row), pick(row | null)}. */
  constructor(bokeh, items, containers, on) {
    Object.assign(this, { bokeh, items, containers, on, managers: [], plots: {}, bars: {}, rows: null,
      syncing: false });
  }

  async embed(signal) {
    const docs = {};
    for (const key of ["curve", ...BAR_KEYS]) {
      const manager = await embedItem(this.containers[key], this.items[key], this.bokeh, signal);
      this.managers.push(manager);
      this.plots[key] = manager.roots[0];
      docs[key] = this.plots[key].model.document;
    }
    const named = (key, name) => docs[key].get_model_by_name(name);
    this.curve = named("curve", "curve");
    this.lifetime = named("curve", "lifetime");
    this.lifetimeSpan = named("curve", "lifetime_span");
    this.peak = named("curve", "peak");
    this.peakLabel = named("curve", "peak_label");
    this.yAxis = named("curve", "y_axis");
    this.curveHover = named("curve", "curve_hover");
    for (const key of BAR_KEYS) {
      const source = named(key, "bars");
      this.bars[key] = { source, axis: named(key, "bars_y_axis") };
      source.inspect.connect(() => this.inspected(key));
      source.selected.change.connect(() => this.selected(key));
    }
  }

  /** Draw one `view` answer (content and its binary buffers). */
  update(content, buffers) {
    const s = content.summary;
    const unit = content.unit;
    const [x, padded, unpadded, codes] = buffers;
    const names = content.curve.names;
    this.curve.data = {
      x: typed(x, Float64Array),
      padded: typed(padded, Float64Array),
      unpadded: typed(unpadded, Float64Array),
      instruction: Array.from(typed(codes, Int32Array), (k) => names[k]),
    };
    this.yAxis.axis_label = `allocated (${unit})`;
    this.curveHover.tooltips = [["step", "@x{0,0}"], ["instruction", "@instruction"],
      ["allocated", `@padded{0,0.000} ${unit}`], ["without padding", `@unpadded{0,0.000} ${unit}`]];
    const at = s.peak_program_order;
    this.peak.visible = at !== null;
    this.peakLabel.visible = at !== null;
    if (at !== null) {
      const right = at > content.curve.steps / 2;
      this.peak.location = at;
      this.peakLabel.setv({
        x: at, y: 0, text: `peak ${fmt.bytes(s.peak_bytes)} at step ${fmt.count(at)}, ${s.peak_instruction}`,
        text_align: right ? "right" : "left", x_offset: right ? -4 : 4,
      });
    }
    this.showLifetime(null);
    this.rows = content.bars.rows;
    for (const key of BAR_KEYS) {
      const order = content.bars.orders[key];
      const { source, axis } = this.bars[key];
      this.syncing = true;
      source.selected.indices = [];
      source.inspected.indices = [];
      this.syncing = false;
      // the padding chart shows the padding alone (hatched), in its own unit
      const padding = key === "padding";
      source.data = {
        x: order.map((_, i) => i + 1),
        size: order.map((r) => (padding ? this.rows.padding[r] : this.rows.size[r])),
        unpadded: order.map((r) => (padding ? 0 : this.rows.unpadded[r])),
        color: order.map((r) => typeColor(this.rows.allocation_type[r])),
        row: order,
      };
      axis.axis_label = padding ? `padding (${content.bars.padding_unit})` : `size (${unit})`;
    }
    for (const plot of Object.values(this.plots)) plot.reset();
  }

  /** A buffer's lifetime on the curve: a bar from its first to its last step, as tall as it is. */
  showLifetime(row) {
    const rows = this.rows;
    const host = this.containers.curve;
    if (row === null || rows === null || rows.start[row] === null) {
      this.lifetime.data = { left: [], right: [], top: [], color: [] };
      this.lifetimeSpan.visible = false;
      delete host.dataset.lifetime;
      return;
    }
    const start = rows.start[row];
    const end = rows.end[row];
    const pad = start === end ? 0.5 : 0;
    const color = typeColor(rows.allocation_type[row]);
    this.lifetime.data = { left: [start - pad], right: [end + pad], top: [rows.size[row]], color: [color] };
    this.lifetimeSpan.setv({ left: start - pad, right: end + pad, fill_color: color, line_color: color, visible: true });
    host.dataset.lifetime = `${start}-${end}`;
  }

  /** Select the bars of one buffer in every chart (null: none). */
  select(row) {
    this.syncing = true;
    for (const { source } of Object.values(this.bars)) {
      const i = row === null ? -1 : source.data.row.indexOf(row);
      source.selected.indices = i < 0 ? [] : [i];
    }
    this.syncing = false;
  }

  inspected(key) {
    if (this.syncing) return;
    const { source } = this.bars[key];
    const hits = source.inspected.indices;
    if (hits.length) this.on.hover(source.data.row[hits[hits.length - 1]]);
  }

  selected(key) {
    if (this.syncing) return;
    const { source } = this.bars[key];
    const hits = source.selected.indices;
    this.on.pick(hits.length ? source.data.row[hits[hits.length - 1]] : null);
  }

  dispose() {
    for (const manager of this.managers) manager?.clear?.();
    this.managers = [];
  }
}
