// The InputPipeline view: asks the kernel for its report, lays out the summary, the device and
// host sections, then embeds the Bokeh charts. data-ready on the root says when it is drawn
// ("1") or failed ("error").
import { embedItem, loadBokeh } from "../charts/bokeh.js";
import { request } from "../lib/transport.js";
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { CSS } from "./style.js";
import { OpTable } from "./table.js";

const STYLE_ID = "xw-input-pipeline-style";

function ensureStyle() {
  if (!document.getElementById(STYLE_ID)) document.head.append(h("style", { id: STYLE_ID }, CSS));
}

export class InputPipelineView {
  constructor(model, el) {
    ensureStyle();
    this.model = model;
    this.el = el;
    this.abort = new AbortController();
    this.views = [];
    this.disposed = false;
    el.classList.add("xw-ip");
    this.titleText = h("span");
    this.status = h("div", { className: "xw-ip-status" }, "Analyzing…");
    this.body = h("div");
    el.replaceChildren(h("div", { className: "xw-ip-title" }, "Input pipeline ", this.titleText), this.status, this.body);
    this.showTitle();
    model.on("change:title", () => this.showTitle());
    this.draw().catch((error) => this.fail(error));
  }

  showTitle() {
    this.titleText.textContent = this.model.get("title");
  }

  async draw() {
    const answer = await request(this.model, "report", {}, {
      onBusy: () => (this.status.textContent = "Waiting for the kernel…"),
    });
    if (!answer || this.disposed) return;
    const report = answer.content;
    const charts = {};
    this.body.replaceChildren(this.summary(report), this.deviceSide(report, charts), this.hostSide(report, charts));
    const pending = Object.entries(report.charts).filter(([name, item]) => item && charts[name]);
    if (pending.length) {
      this.status.textContent = "Loading charts…";
      const bokeh = await loadBokeh(this.model);
      for (const [name, item] of pending) {
        if (this.disposed) return;
        this.views.push(await embedItem(charts[name], item, bokeh, this.abort.signal));
      }
    }
    this.status.textContent = "";
    this.el.dataset.ready = "1";
  }

  summary(report) {
    const s = report.summary;
    const badge = h("span", { className: "xw-ip-badge", dataset: { verdict: s.verdict ?? "none" } },
      s.verdict ? `${s.verdict} input-bound` : "No steps found");
    const share = s.input_share_pct === null ? null
      : h("span", { className: "xw-ip-share" }, `${fmt.pct(s.input_share_pct)} of step time waiting for input`);
    const origin = s.steps ? h("span", { className: "xw-ip-muted" },
      `${fmt.count(s.steps)} steps (from ${s.step_source}); thresholds ${fmt.pct(s.thresholds_pct[0], 0)} `
      + `moderately, ${fmt.pct(s.thresholds_pct[1], 0)} highly`) : null;
    return h("div", { className: "xw-ip-section xw-ip-summary" },
      h("div", { className: "xw-ip-verdict" }, badge, share, origin),
      h("p", { className: "xw-ip-recommendation" }, s.recommendation),
      this.leftOut(report.left_out));
  }

  // The steps found but not counted (XProf's rule), each with its reason; null when none.
  leftOut(steps) {
    if (!steps?.length) return null;
    return h("div", { className: "xw-ip-left-out xw-ip-muted" },
      `Not counted, as XProf counts steps (${fmt.count(steps.length)} of the steps found):`,
      h("ul", {}, steps.map((step) => h("li", {}, h("b", {}, step.name), `: ${step.reason}`))));
  }

  deviceSide(report, charts) {
    const section = h("div", { className: "xw-ip-section xw-ip-device" }, h("h3", {}, "Device side: step time"));
    if (report.no_steps) {
      section.append(h("div", { className: "xw-ip-nosteps" },
        h("div", {}, "No training steps found, so step time cannot be broken down. Looked for:"),
        h("ul", {}, report.no_steps.looked_for.map((what) => h("li", {}, what))),
        h("pre", {}, report.no_steps.how_to_mark)));
      return section;
    }
    const st = report.stats;
    section.append(h("table", { className: "xw-ip-stats" },
      h("tr", {}, ["Average", "Std. deviation", "Minimum", "Maximum"].map((t) => h("th", {}, `${t} (ms)`))),
      h("tr", {}, [st.avg_ms, st.std_ms, st.min_ms, st.max_ms].map((v) => h("td", {}, fmt.ms(v))))));
    charts.steps = h("div", { className: "xw-ip-chart", dataset: { chart: "steps" } });
    charts.share = h("div", { className: "xw-ip-chart", dataset: { chart: "share" } });
    section.append(charts.steps, charts.share);
    return section;
  }

  hostSide(report, charts) {
    const section = h("div", { className: "xw-ip-section xw-ip-host-side" }, h("h3", {}, "Host side: input operations"));
    if (!report.ops.rows.length) {
      section.append(h("div", { className: "xw-ip-muted" },
        "No input operations found on the host: no tf.data or grain iterators, no host-to-device "
        + "copies, and no annotation matching input_pattern."));
      return section;
    }
    charts.host = h("div", { className: "xw-ip-chart", dataset: { chart: "host" } });
    const rows = report.host_breakdown.map((b) => h("tr", {},
      h("td", {}, h("span", { className: "xw-ip-swatch", style: `background:${b.color}` }), b.category),
      h("td", { className: "xw-ip-num" }, `${fmt.ms(b.ms)} ms`),
      h("td", { className: "xw-ip-num" }, fmt.pct(b.pct))));
    section.append(
      h("div", { className: "xw-ip-host" }, charts.host, h("table", { className: "xw-ip-breakdown" }, rows)),
      new OpTable(report.ops).el);
    return section;
  }

  fail(error) {
    if (this.disposed) return;
    this.status.replaceChildren(h("span", { className: "xw-ip-error" }, String(error.message ?? error)));
    this.el.dataset.ready = "error";
  }

  dispose() {
    this.disposed = true;
    this.abort.abort();
    for (const views of this.views) views?.clear?.();
    this.views = [];
  }
}
