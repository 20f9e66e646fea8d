// The op profile's controller: overview from the synced summary, controls synced both ways with
// the kernel's traits, the table on one request channel (newer answers replace older ones), the
// detail card and the roofline chart.
import { embedItem, loadBokeh } from "../charts/bokeh.js";
import { RequestError, request } from "../lib/transport.js";
import { cardContent } from "./card.js";
import { h } from "../lib/dom.js";
import { emptyState } from "../lib/empty.js";
import { linkButton } from "../lib/links.js";
import * as fmt from "../lib/format.js";
import { CSS } from "./style.js";
import { rowsOf } from "../lib/table.js";
import { OpTable } from "./table.js";
import { onTraits, startView, stopView } from "../lib/view_state.js";

const CONTROLS = ["group_by", "sort_by", "ops_shown", "top_90", "exclude_idle", "name_filter"];
const GROUPS = [["program", "Program"], ["category", "Category"], ["provenance", "Framework op"]];
const SORTS = [["time", "Time"], ["wasted_time", "Wasted time"], ["flops_utilization", "FLOPS utilization"]];
const FILTER_DELAY_MS = 250;

export class OpProfileView {
  constructor(model, el) {
    startView(this, model, el, "xw-op-profile");
    this.details = new Map(); // op -> details answer (or a promise of it)
    this.pinned = null;
    this.summary = model.get("_summary") ?? {};
    if (this.summary.error) {
      this.showNoOps(this.summary.error);
      return;
    }
    this.table = new OpTable({
      hover: (op) => this.hover(op),
      leave: (next) => { if (!this.card.contains(next)) this.hover(null); },
      select: (op) => this.select(op),
      needFused: (op) => this.fetchFused(op),
    });
    this.build();
    onTraits(this, CONTROLS, () => this.scheduleRefresh());
    this.refresh();
  }

  dispose() {
    stopView(this);
    clearTimeout(this.filterTimer);
    this.rooflineViews?.clear();
  }

  // ---- DOM --------------------------------------------------------------------------------
  showNoOps(message) {
    this.el.replaceChildren(h("style", {}, CSS), emptyState("No op profile", message, "", "xw-op-message"));
    this.el.dataset.ready = "no-ops";
  }

  build() {
    const s = this.summary;
    const tile = (label, value, title) => h("div", { className: "xw-op-tile", title },
      h("span", { className: "xw-op-tile-label" }, label), h("span", { className: "xw-op-tile-value" }, value));
    const peak = s.has_peaks
      ? `peaks ${fmt.si(s.peak_tflops * 1e12, "FLOP/s")}, ${fmt.si(s.peak_gbps * 1e9, "B/s")}${s.peak_source === "argument" ? " (given)" : ""}`
      : "no peak known";
    const noPeak = "no peak FLOP rate or bandwidth known: pass peak_tflops= / peak_gbps=";
    const overview = h(
      "div",
      { className: "xw-op-overview" },
      h("div", { className: "xw-op-tiles" },
        tile("Device", fmt.deviceLabel(s.device_kind, s.device_type, s.devices), peak),
        tile("Total device time", fmt.time(s.total_time_us), "summed over cores / devices / threads"),
        tile("Idle", fmt.percent(s.idle_share), "time no op ran"),
        tile("FLOPS utilization", s.has_peaks ? fmt.percent(s.flops_utilization) : "no peak",
          s.has_peaks ? "FLOPs / total time / peak FLOP/s" : noPeak),
        tile("HBM bandwidth utilization", s.has_peaks ? fmt.percent(s.bandwidth_utilization) : "no peak",
          s.has_peaks ? "HBM bytes / total time / peak bandwidth" : noPeak),
        tile("Ops", fmt.count(s.ops), "distinct (program, op name) pairs")),
      h("ul", { className: "xw-op-suggestions" }, (s.suggestions ?? []).map((text) => h("li", {}, text))),
      h("div", { className: "xw-op-read" }, `Read: ${s.read}. ${peak}.`, (s.notes ?? []).map((n) => ` ${n}`)),
    );
    this.groupSelect = h("select", { title: "Group ops by", onchange: () => this.set("group_by", this.groupSelect.value) },
      GROUPS.map(([v, t]) => h("option", { value: v }, t)));
    this.sortSelect = h("select", { title: "Order groups and ops by (largest first)", onchange: () => this.set("sort_by", this.sortSelect.value) },
      SORTS.map(([v, t]) => h("option", { value: v }, t)));
    this.opsRange = h("input", { type: "range", min: "10", max: "100", step: "1",
      oninput: () => { this.opsLabel.textContent = this.opsRange.value; },
      onchange: () => this.set("ops_shown", Number(this.opsRange.value)) });
    this.opsLabel = h("span", { className: "xw-op-muted" });
    this.top90 = h("input", { type: "checkbox", onchange: () => this.set("top_90", this.top90.checked) });
    this.idleBox = h("input", { type: "checkbox", onchange: () => this.set("exclude_idle", this.idleBox.checked) });
    this.filterInput = h("input", { type: "search", placeholder: "Filter by name (regex)",
      title: "Regular expression matched against op name, framework op and category",
      oninput: () => {
        clearTimeout(this.filterTimer);
        this.filterTimer = setTimeout(() => this.set("name_filter", this.filterInput.value), FILTER_DELAY_MS);
      } });
    this.problem = h("span", { className: "xw-op-problem" });
    const controls = h("div", { className: "xw-op-controls" },
      h("label", {}, "Group by", this.groupSelect),
      h("label", { title: "ops shown per group" }, "Ops", this.opsRange, this.opsLabel),
      h("label", {}, "Sort by", this.sortSelect),
      h("label", { title: "show only the ops making up 90% of each group's time" }, this.top90, "Top 90%"),
      h("label", { title: "leave idle time out; shares become shares of busy time" }, this.idleBox, "Exclude idle"),
      this.filterInput, this.problem);
    this.card = h("div", { className: "xw-op-card", hidden: true,
      onmouseleave: (e) => { if (!this.table.table.contains(e.relatedTarget)) this.hover(null); } });
    this.roofline = h("div", { className: "xw-op-roofline" }, h("span", { className: "xw-op-muted" }, "Roofline: loading…"));
    this.status = h("div", { className: "xw-op-status" });
    // The card has a panel of its own beside the table (below it in a narrow cell), never over it.
    this.hint = h("div", { className: "xw-op-side-hint" }, "Point at an op for its details; click it to pin them.");
    this.el.replaceChildren(h("style", {}, CSS), overview, controls,
      h("div", { className: "xw-op-body" }, h("div", { className: "xw-op-table-wrap" }, this.table.table),
        h("div", { className: "xw-op-side" }, this.hint, this.card)),
      this.roofline, this.status);
    this.syncControls();
  }

  syncControls() {
    const m = this.model;
    this.groupSelect.value = m.get("group_by");
    this.sortSelect.value = m.get("sort_by");
    this.opsRange.value = String(m.get("ops_shown"));
    this.opsLabel.textContent = String(m.get("ops_shown"));
    this.top90.checked = Boolean(m.get("top_90"));
    this.idleBox.checked = Boolean(m.get("exclude_idle"));
    if (document.activeElement !== this.filterInput) this.filterInput.value = m.get("name_filter") ?? "";
  }

  set(name, value) {
    this.model.set(name, value);
    this.model.save_changes();
    this.scheduleRefresh();
  }

  // ---- data -------------------------------------------------------------------------------
  scheduleRefresh() {
    if (this.refreshQueued) return;
    this.refreshQueued = true;
    queueMicrotask(() => {
      this.refreshQueued = false;
      this.refresh();
    });
  }

  async refresh() {
    if (this.disposed) return;
    this.syncControls();
    const params = Object.fromEntries(CONTROLS.map((name) => [name, this.model.get(name)]));
    this.status.textContent = "Loading the op table…";
    let answer;
    try {
      answer = await request(this.model, "table", params, {
        channel: "table", onBusy: () => { this.status.textContent = "Waiting for the kernel (a cell may be running)…"; },
      });
    } catch (error) {
      this.fail(error);
      return;
    }
    if (answer === null || this.disposed) return; // a newer request replaced this one
    const { content } = answer;
    this.problem.textContent = content.problem ?? "";
    if (content.problem) {
      this.status.textContent = "";
      return;
    }
    const rows = rowsOf(content.rows);
    this.table.setRows(rows, Boolean(this.summary.has_peaks));
    const ops = rows.filter((r) => r.kind === "op").length;
    const groups = rows.filter((r) => r.kind === "group").length;
    this.status.textContent = `${groups} groups, ${ops} ops shown. Click a group to expand it, an op to pin its details.`;
    this.el.dataset.group = params.group_by;
    this.el.dataset.sort = params.sort_by;
    this.el.dataset.ready = "1";
    if (!this.rooflineStarted) {
      this.rooflineStarted = true;
      this.drawRoofline();
    }
  }

  fail(error) {
    const text = error instanceof RequestError ? error.message : String(error);
    this.status.textContent = "";
    this.el.querySelector(".xw-op-body")?.replaceWith(h("div", { className: "xw-op-error" },
      h("b", {}, "The op table failed. "), text));
    this.el.dataset.ready = "error";
  }

  async fetchFused(op) {
    try {
      const answer = await request(this.model, "fused", { op });
      return answer ? rowsOf(answer.content.rows) : null;
    } catch (error) {
      this.status.textContent = `Fusion contents failed: ${error.message ?? error}`;
      return null;
    }
  }

  detailsOf(op) {
    if (!this.details.has(op)) {
      this.details.set(op, request(this.model, "details", { op }).then((a) => a.content));
    }
    return this.details.get(op);
  }

  // ---- the detail card --------------------------------------------------------------------
  hover(op) {
    if (this.pinned !== null) return;
    if (op === null) {
      this.hideCard();
      return;
    }
    this.showCard(op, false);
  }

  hideCard() {
    this.card.hidden = true;
    this.hint.hidden = false;
    this.table.highlight(null);
  }

  select(op) {
    this.pinned = this.pinned === op ? null : op;
    if (this.pinned === null) {
      this.hideCard();
      return;
    }
    this.showCard(op, true);
  }

  async showCard(op, pinned) {
    this.showing = op;
    this.table.highlight(op);
    let d;
    try {
      d = await this.detailsOf(op);
    } catch (error) {
      this.details.delete(op);
      this.status.textContent = `Details failed: ${error.message ?? error}`;
      return;
    }
    if (this.showing !== op || this.disposed) return;
    const link = [linkButton(this.model, "trace", d.name, "Show in Trace Viewer"),
      linkButton(this.model, "graph", d.name, "Open in Graph Viewer")];
    const content = cardContent(d, pinned, () => this.select(op), link).flat(2).filter(Boolean);
    this.card.replaceChildren(...content);
    this.card.dataset.op = String(op);
    this.card.hidden = false;
    this.hint.hidden = true;
  }

  // ---- roofline ---------------------------------------------------------------------------
  async drawRoofline() {
    try {
      const bokeh = await loadBokeh(this.model);
      const answer = await request(this.model, "roofline");
      if (!answer || this.disposed) return;
      const target = h("div", { className: "xw-op-roofline-plot" });
      this.roofline.replaceChildren(target);
      this.rooflineViews = await embedItem(target, answer.content.item, bokeh, this.abort.signal);
      this.el.dataset.roofline = "1";
    } catch (error) {
      if (this.disposed) return;
      this.roofline.replaceChildren(h("span", { className: "xw-op-problem" },
        `Roofline failed: ${error.message ?? error}`));
      this.el.dataset.roofline = "error";
    }
  }
}
