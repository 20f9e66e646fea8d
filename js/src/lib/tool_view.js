// What the table tools' views share (framework op stats, kernel stats, HLO stats, roofline):
// a header of tiles, controls synced with the kernel's traits, one request that answers the
// table (and charts) for the current controls, newest answer wins, charts redrawn each time.
//
//   class MyView extends ToolView {
//     build() { ...return [header, controls, this.chartBox, this.table.el]; }
//     params() { return { include_idle: this.model.get("include_idle") }; }
//     show(content) { this.table.setRows(rowsOf(content.rows)); return content.charts; }
//   }
//   new MyView(model, el, { rootClass: "xw-my", method: "table", traits: ["include_idle"] });
import { clearCharts, drawCharts } from "../charts/embed.js";
import { h } from "./dom.js";
import { RequestError, request } from "./transport.js";
import { toolCSS } from "./toolstyle.js";
import { onTraits, startView, stopView } from "./view_state.js";

/** A row of labelled values: [[label, value, title], ...]. */
export function tiles(list) {
  return h("div", { className: "xw-tiles" }, list.map(([label, value, title]) =>
    h("div", { className: "xw-tile", title: title ?? "" },
      h("span", { className: "xw-tile-label" }, label), h("span", { className: "xw-tile-value" }, value))));
}

/** A checkbox bound to a boolean trait of the model. */
export function traitBox(model, trait, label, title) {
  const box = h("input", { type: "checkbox", onchange: () => { model.set(trait, box.checked); model.save_changes(); } });
  const sync = () => { box.checked = Boolean(model.get(trait)); };
  sync();
  model.on(`change:${trait}`, sync);
  return h("label", { title }, box, label);
}

export class ToolView {
  constructor(model, el, { rootClass, method = "table", traits = [] }) {
    startView(this, model, el, rootClass);
    this.method = method;
    this.traits = traits;
    this.summary = model.get("_summary") ?? {};
    this.status = h("div", { className: "xw-status" });
    this.chartBox = h("div", { className: "xw-charts" });
    const parts = this.build();
    el.replaceChildren(h("style", {}, toolCSS(`.${rootClass}`)), ...parts.filter(Boolean), this.status);
    onTraits(this, traits, () => this.refresh());
    this.refresh();
  }

  dispose() {
    stopView(this);
    clearCharts(this.views);
  }

  /** The header: the tool's title and the profile's source, its tiles ([[label, value, title],
   * ...]) and anything after them (notes). */
  head(title, list, ...after) {
    return h("div", { className: "xw-tool-head" },
      h("div", { className: "xw-tool-title" }, `${title} `, h("span", {}, this.summary.source ?? "")),
      tiles(list), ...after);
  }

  /** Request parameters for the current controls (default: the synced traits). */
  params() {
    return Object.fromEntries(this.traits.map((t) => [t, this.model.get(t)]));
  }

  async refresh() {
    if (this.disposed) return;
    this.el.dataset.ready = "0";
    this.status.textContent = "Loading…";
    let answer;
    try {
      answer = await request(this.model, this.method, this.params(), {
        channel: this.method,
        onBusy: () => { this.status.textContent = "Waiting for the kernel (a cell may be running)…"; },
      });
    } catch (error) {
      this.fail(error);
      return;
    }
    if (answer === null || this.disposed) return; // a newer request replaced this one
    const charts = this.show(answer.content) ?? [];
    this.status.textContent = this.statusText(answer.content);
    clearCharts(this.views);
    this.el.dataset.charts = "0";
    this.el.dataset.ready = "1";
    try {
      this.views = await drawCharts(this.model, this.chartBox, charts, this.abort.signal);
      this.afterCharts?.();
      this.el.dataset.charts = String(charts.length);
    } catch (error) {
      if (!this.disposed) this.chartBox.replaceChildren(h("span", { className: "xw-chart-problem" },
        `Charts failed: ${error.message ?? error}`));
    }
  }

  statusText() {
    return "";
  }

  fail(error) {
    const text = error instanceof RequestError ? error.message : String(error);
    this.status.replaceChildren(h("span", { className: "xw-problem" }, text));
    this.el.dataset.ready = "error";
  }
}
