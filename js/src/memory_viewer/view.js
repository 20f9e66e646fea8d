// The MemoryViewer's controller: the module and memory-space pickers synced both ways with the
// kernel's traits, the chart templates fetched once, then one `view` request per choice on one
// channel (a newer choice replaces an older request). data-ready on the root: "0" while a choice
// loads, "1" once drawn (a message included), "error" on failure; data-module and data-space say
// what is drawn.
import { h } from "../lib/dom.js";
import { emptyState } from "../lib/empty.js";
import * as fmt from "../lib/format.js";
import { chartChoiceMethods } from "../lib/chart_choices.js";
import { CARD_HINT, cardContent } from "./card.js";
import { BAR_KEYS, Charts } from "./charts.js";
import { TYPE_COLORS } from "./colors.js";
import { CSS } from "./style.js";
import { summaryContent } from "./summary.js";

const STYLE_ID = "xw-memory-viewer-style";
const BAR_LABELS = { program: "program order", size: "size", padding: "padding" };

function ensureStyle() {
  if (!document.getElementById(STYLE_ID)) document.head.append(h("style", { id: STYLE_ID }, CSS));
}

/** "jit_step(42)" -> "jit_step (42)": a module label as the dropdown shows it. */
function moduleText(label) {
  const at = label.lastIndexOf("(");
  return at > 0 ? `${label.slice(0, at)} (${label.slice(at + 1, -1)})` : label;
}

export class MemoryViewerView {
  constructor(model, el) {
    ensureStyle();
    this.mount(model, el, "xw-mv");
    this.hovered = null;
    this.pinned = null;
    this.linkSent = null;
    this.build();
    if (model.get("_error")) {
      this.showMessage("No HLO protos in this profile", model.get("_error"));
      this.el.dataset.ready = "1";
      return;
    }
    this.begin([
      ["change:_modules", () => this.syncOptions()],
      ["change:_spaces", () => this.syncOptions()],
      ["change:module", () => this.choiceChanged()],
      ["change:memory_space", () => this.choiceChanged()],
      ["change:title", () => { this.source.textContent = model.get("title"); }],
    ]);
  }

  // ---- DOM --------------------------------------------------------------------------------
  build() {
    const m = this.model;
    this.moduleSelect = h("select", { title: "HLO module (program id)", onchange: () => this.set("module", this.moduleSelect.value) });
    this.spaceSelect = h("select", { title: "memory space", onchange: () => this.set("memory_space", this.spaceSelect.value) });
    this.source = h("span", { className: "xw-mv-source", title: m.get("title") }, m.get("title"));
    this.status = h("div", { className: "xw-mv-status" });
    this.summary = h("div", { className: "xw-mv-summary" });
    this.containers = Object.fromEntries(["curve", ...BAR_KEYS].map((key) => [key,
      h("div", { className: "xw-mv-chart", dataset: { chart: key } })]));
    this.noCurve = h("div", { className: "xw-mv-nocurve" });
    this.noPadding = h("div", { className: "xw-mv-nopadding" },
      "No buffer live at the peak carries padding, so there is no padding chart.");
    this.barsNote = h("span");
    this.card = h("div", { className: "xw-mv-card" }, h("span", { className: "xw-mv-card-hint" }, CARD_HINT));
    const legend = h("div", { className: "xw-mv-legend" }, this.barsNote,
      ...Object.entries(TYPE_COLORS).map(([type, color]) =>
        h("span", {}, h("span", { className: "xw-mv-swatch", style: { background: color } }), type)),
      h("span", {}, h("span", { className: "xw-mv-hatch" }), "padding"));
    this.body = h("div", { className: "xw-mv-body" },
      this.summary,
      h("div", { className: "xw-mv-curve" }, this.containers.curve), this.noCurve,
      h("div", { className: "xw-mv-buffers" },
        h("div", { className: "xw-mv-bars" }, legend, ...BAR_KEYS.map((key) => this.containers[key]), this.noPadding),
        this.card));
    this.message = h("div", { className: "xw-empty xw-mv-message", role: "note", hidden: true });
    this.el.replaceChildren(
      h("div", { className: "xw-mv-head" }, h("span", { className: "xw-mv-title" }, "Memory viewer"), this.source,
        h("label", {}, "Module", this.moduleSelect), h("label", {}, "Memory", this.spaceSelect)),
      this.status, this.message, this.body);
    this.syncOptions();
  }

  /** Dropdown options from the synced lists, selection from the synced choice. */
  syncOptions() {
    const m = this.model;
    const fill = (select, values, text) => {
      const current = [...select.options].map((o) => o.value);
      if (current.length !== values.length || current.some((v, i) => v !== values[i])) {
        select.replaceChildren(...values.map((v) => h("option", { value: v }, text(v))));
      }
    };
    fill(this.moduleSelect, m.get("_modules") ?? [], moduleText);
    fill(this.spaceSelect, m.get("_spaces") ?? [], (v) => v);
    this.moduleSelect.value = m.get("module");
    this.spaceSelect.value = m.get("memory_space");
    this.spaceSelect.disabled = this.spaceSelect.options.length < 2;
    this.moduleSelect.parentElement.hidden = !this.moduleSelect.options.length;
    this.spaceSelect.parentElement.hidden = !this.spaceSelect.options.length;
  }

  showMessage(title, text) {
    this.message.replaceChildren(...emptyState(title, text).childNodes);
    this.message.hidden = false;
    this.body.hidden = true;
    this.el.dataset.state = "message";
  }

  // ---- data -------------------------------------------------------------------------------
  makeCharts(bokeh, content) {
    return new Charts(bokeh, content, this.containers, {
      hover: (row) => this.hover(row),
      pick: (row) => this.pick(row),
    });
  }

  loadingText() {
    return `Analyzing ${moduleText(this.model.get("module"))} in ${this.model.get("memory_space")}…`;
  }

  draw(content, buffers) {
    this.status.textContent = "";
    this.el.dataset.module = content.module;
    this.el.dataset.space = content.memory_space;
    this.hovered = null;
    this.pinned = null;
    this.linkSent = null;
    if (content.error) {
      this.showMessage(`Nothing to show for ${moduleText(content.module)}`, content.error);
      this.el.dataset.ready = "1";
      return;
    }
    this.message.hidden = true;
    this.body.hidden = false;
    delete this.el.dataset.state;
    const s = content.summary;
    this.summary.replaceChildren(...summaryContent(s));
    this.el.dataset.curve = content.curve.steps ? "drawn" : "none";
    this.noCurve.textContent = content.curve.steps ? ""
      : `${moduleText(content.module)} allocates nothing on the heap in ${content.memory_space}, so there is no `
        + "memory curve: its buffers (below) live for the whole program.";
    const bars = content.bars;
    const shown = Math.max(...BAR_KEYS.map((key) => bars.orders[key].length));
    this.barsNote.textContent = `${fmt.count(bars.total)} buffers live at the peak`
      + (shown < bars.total ? `; each chart shows the ${fmt.count(shown)} largest (by size, or by padding).` : ".");
    this.el.dataset.padding = bars.padded ? "drawn" : "none";
    this.charts.update(content, buffers);
    this.showCard();
    this.el.dataset.ready = "1";
  }

  // ---- the card ---------------------------------------------------------------------------
  hover(row) {
    if (this.pinned !== null || row === this.hovered) return;
    this.hovered = row;
    this.linkSent = null;
    this.showCard();
  }

  pick(row) {
    this.pinned = row;
    if (row !== null) this.hovered = row;
    this.linkSent = null;
    this.charts.select(row);
    this.showCard();
  }

  showCard() {
    const row = this.pinned ?? this.hovered;
    this.charts?.showLifetime(row);
    if (row === null) {
      this.card.replaceChildren(h("span", { className: "xw-mv-card-hint" }, CARD_HINT));
      delete this.card.dataset.buffer;
      return;
    }
    this.card.dataset.buffer = this.charts.rows.name[row];
    this.card.replaceChildren(...cardContent(this.charts.rows, row, {
      pinned: this.pinned !== null,
      linkSent: this.linkSent !== null,
      onUnpin: () => this.pick(null),
      onLink: (op) => this.link(op),
      onGraph: this.model.get("_linked") ? (op) => this.link(op, "graph") : null,
    }));
  }

  /** Ask for the op in the Trace Viewer: the suite observes `link` (cleared first, so asking twice
   * for the same op still notifies). */
  link(op, tool = "trace") {
    this.model.set("link", {});
    this.model.save_changes();
    this.model.set("link", tool === "graph" ? { tool, op, module: this.model.get("module") } : { tool, op });
    this.model.save_changes();
    this.linkSent = op;
    this.showCard();
  }
}

Object.assign(MemoryViewerView.prototype, chartChoiceMethods);
