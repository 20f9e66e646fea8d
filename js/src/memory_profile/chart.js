// The memory timeline: its Bokeh template embedded once; each allocator only replaces the data
// source's columns. Hover is read from the source's `inspect` signal (the view's card); a click
// on the plot (not a drag) reports the time under the pointer.
import { embedItem } from "../charts/bokeh.js";
import * as fmt from "../lib/format.js";

const CLICK_SLOP_PX = 4;

export class TimelineChart {
  /** on: {hover(index), click(timeUs)}. */
  constructor(bokeh, item, container, on) {
    Object.assign(this, { bokeh, item, container, on, manager: null, down: null });
  }

  async embed(signal) {
    this.manager = await embedItem(this.container, this.item, this.bokeh, signal);
    this.plot = this.manager.roots[0];
    const doc = this.plot.model.document;
    const named = (name) => doc.get_model_by_name(name);
    this.source = named("timeline");
    this.yAxis = named("y_axis");
    this.xAxis = named("x_axis");
    this.peak = named("peak");
    this.peakLabel = named("peak_label");
    this.freeArea = named("free_area");
    this.source.inspect.connect(() => {
      const hits = this.source.inspected.line_indices;
      if (hits.length) this.on.hover(hits[hits.length - 1]);
    });
    this.container.addEventListener("pointerdown", (e) => { this.down = [e.clientX, e.clientY]; });
    this.container.addEventListener("pointerup", (e) => this.pointerUp(e));
  }

  pointerUp(e) {
    const down = this.down;
    this.down = null;
    if (!down || Math.hypot(e.clientX - down[0], e.clientY - down[1]) > CLICK_SLOP_PX) return;
    const canvas = this.plot.canvas_view.el.getBoundingClientRect();
    const sx = e.clientX - canvas.left;
    const sy = e.clientY - canvas.top;
    const frame = this.plot.frame.bbox;
    if (sx < frame.left || sx > frame.right || sy < frame.top || sy > frame.bottom) return;
    this.on.click(this.plot.frame.x_scale.invert(sx) * this.timeScale);
  }

  /** Draw one allocator: snapshots (decoded columns), the unit, the summary. The time axis is in
   * seconds when the timeline spans more than ten of them, else in milliseconds. */
  update(s, unit, summary, freeHidden) {
    const n = s.time_us.length;
    const span = n ? s.time_us[n - 1] - s.time_us[0] : 0;
    this.timeScale = span > 1e7 ? 1e6 : 1e3;
    this.xAxis.axis_label = this.timeScale === 1e6 ? "time (s)" : "time (ms)";
    const xs = Float64Array.from(s.time_us, (t) => t / this.timeScale);
    this.source.data = {
      x: xs, stack: s.stack, heap: s.heap, free: s.free,
      in_use: Float64Array.from({ length: n }, (_, i) => s.stack[i] + s.heap[i]),
      fragmentation: s.fragmentation, activity: s.activity, op: s.op_name,
      step: Array.from(s.step), region: s.region_type, dtype: s.data_type, shape: s.shape,
      requested: s.requested, allocated: s.allocated,
    };
    this.yAxis.axis_label = `memory (${unit})`;
    this.freeArea.visible = !freeHidden;
    const at = summary.peak_time_us / this.timeScale;
    this.peak.setv({ location: at, visible: true });
    const right = n > 1 && at > (xs[0] + xs[n - 1]) / 2;
    this.peakLabel.setv({
      x: at, y: 0, visible: true,
      text: `peak ${fmt.bytes(summary.peak_bytes)} at ${fmt.time(summary.peak_time_us)}${summary.peak_op ? ` (${summary.peak_op})` : ""}`,
      text_align: right ? "right" : "left", x_offset: right ? -4 : 4,
    });
    this.plot.reset();
  }

  dispose() {
    this.manager?.clear?.();
    this.manager = null;
  }
}
