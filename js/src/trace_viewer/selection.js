// Selecting events (click, Ctrl/⌘-click, box) and showing them: details for one, an aggregate
// table for several. Methods of TraceView (view.js).
import { request } from "../lib/transport.js";
import { h } from "../lib/dom.js";
import { linkButton } from "../lib/links.js";
import { sourcePanel } from "../lib/source_panel.js";
import { aggregateRows, aggregateView, detailsView } from "./dom.js";
import { rowsOf } from "../lib/table.js";
import { pivotView } from "./pivot.js";

/** The XLA op an event ran (TPU/GPU op lines carry per-op stats, CPU ops an hlo_op stat). */
function xlaOpName(d) {
  if (d.stats?.hlo_op) return String(d.stats.hlo_op);
  return d.metadata_stats?.hlo_category !== undefined ? String(d.name) : null;
}
import { AXIS_H, DEPTH_H, TRACK_PAD, screenTop } from "./layout.js";
import { formatDuration } from "./timescale.js";

const MIN_PAD_US = 0.001;

/**
 * The (track, min depth, max depth) rows a box from `y0` to `y1` below the axis crosses, with
 * the tracks scrolled by `scrollY`: pinned rows where they stay, scrolled rows only where the
 * pinned ones leave them in sight; a collapsed section stands for its tracks (not counters).
 */
export function boxRows(layout, tracks, y0, y1, scrollY) {
  const rows = [];
  for (const row of layout.rows) {
    const top = screenTop(row, scrollY);
    const lo = row.pinned ? y0 : Math.max(y0, layout.pinnedH);
    if (lo >= y1 || top + row.h <= lo || top >= y1) continue;
    if (row.type === "track" && !row.counter) {
      const band = (y) => Math.max(0, Math.min(row.maxDepth, Math.floor((y - top - TRACK_PAD) / DEPTH_H)));
      rows.push([row.trackId, band(lo), band(y1)]);
    } else if (row.type === "section" && row.collapsed) {
      for (const t of tracks) if (t.section_id === row.sectionId && t.kind !== "counter") rows.push([t.id, 0, t.max_depth]);
    }
  }
  return rows;
}

export const selectionMethods = {
  // ---- selection --------------------------------------------------------------------------
  click(p, additive) {
    this.focus = null;
    const hit = this.hitTest(p);
    if (!hit || hit.slice < 0) {
      if (!additive && !this.pickOverlay(p)) this.setSelection([], true);
      return;
    }
    const tile = hit.tile;
    const i = hit.slice;
    const event = tile.sEvent[i];
    if (tile.sCount[i] === 1) this.spans.set(event, [tile.start + tile.sStart[i], tile.start + tile.sStart[i] + tile.sDur[i]]);
    if (additive) {
      const next = new Set(this.selection);
      if (next.has(event)) next.delete(event);
      else next.add(event);
      this.setSelection([...next], true);
    } else {
      this.setSelection([event], true);
    }
  },

  // fromBox: a box selection, whose details are its pivot.
  setSelection(events, sync, fromBox = false) {
    const edge = this.pickedEdge;
    if (edge && !(events.length === 2 && events[0] === edge.from && events[1] === edge.to)) this.pickedEdge = null;
    this.selection = new Set(events);
    if (this.focus && !this.selection.has(this.focus.event)) this.focus = null;
    this.selectedSpan = null;
    this.boxTruncated = false;
    this.fromBox = fromBox;
    if (sync) {
      this.model.set("selected_events", [...this.selection]);
      this.model.save_changes();
    }
    this.showSelection();
    this.requestDraw();
  },

  selectionFromModel() {
    const events = this.model.get("selected_events") ?? [];
    if (events.length === this.selection.size && events.every((e) => this.selection.has(e))) return;
    this.selection = new Set(events);
    this.selectedSpan = null;
    this.pickedEdge = null;
    this.showSelection();
    this.requestDraw();
  },

  selectBox(box, additive) {
    const t0 = this.timeAt(Math.min(box.x0, box.x1));
    const t1 = this.timeAt(Math.max(box.x0, box.x1));
    const rows = boxRows(this.layout, this.tables.tracks, Math.min(box.y0, box.y1) - AXIS_H,
      Math.max(box.y0, box.y1) - AXIS_H, this.scrollY);
    if (!rows.length) return;
    const keep = additive ? [...this.selection] : [];
    request(this.model, "select_box", { start_us: t0, end_us: t1, rows, add: keep }, { channel: "selection" })
      .then((answer) => {
        if (!answer) return;
        const { content } = answer;
        this.setSelection(content.events, true, true);
        this.boxTruncated = content.truncated;
      }, (error) => this.fail(error));
  },

  // From the kernel (box or aggregate answers) when it has said; else from what the view knows.
  selectionSpan() {
    if (this.selectedSpan) return this.selectedSpan;
    let s = Infinity;
    let e = -Infinity;
    for (const event of this.selection) {
      const span = this.spans.get(event);
      if (!span) continue;
      s = Math.min(s, span[0]);
      e = Math.max(e, span[1]);
    }
    return s <= e ? [s, e] : null;
  },

  markSelection() {
    const span = this.selectionSpan();
    if (!span) return;
    this.mark = { start: span[0], end: span[1], label: `selection ${formatDuration(span[1] - span[0])}` };
    this.requestDraw();
  },

  zoomToSelection() {
    const span = this.selectionSpan();
    if (!span) return;
    const pad = Math.max((span[1] - span[0]) * 0.05, MIN_PAD_US);
    this.setView(span[0] - pad, span[1] + pad);
  },

  showSelection() {
    const events = [...this.selection];
    this.el.dataset.selected = String(events.length);
    delete this.details.dataset.overlay;
    if (!events.length) {
      this.details.replaceChildren(h("div", { className: "xw-tv-empty" },
        "Click an event for its details; Ctrl/⌘-click or drag a box to select several. Press ? for keys."));
      return;
    }
    if (this.pickedEdge) {
      this.showPickedEdge();
      return;
    }
    if (events.length === 1) {
      request(this.model, "details", { event: events[0] }, { channel: "details" }).then((answer) => {
        if (!answer) return;
        const d = { event: events[0], ...answer.content };
        if (d.start_us !== undefined) this.spans.set(events[0], [d.start_us, d.start_us + (d.duration_us ?? 0)]);
        this.details.replaceChildren(detailsView(d, {
          trackName: (id) => this.trackNames.get(id) ?? String(id),
          onGo: (event) => this.goToEvent(event),
          link: [linkButton(this.model, "op", xlaOpName(d), "Open in Op Profile"),
            linkButton(this.model, "graph", xlaOpName(d), "Open in Graph Viewer")],
          source: d.source_stack?.length ? sourcePanel((frame) => request(this.model, "source",
            { event: events[0], frame }, { channel: "source" })) : null,
        }));
        this.details.dataset.event = String(events[0]);
      }, (error) => this.details.replaceChildren(h("div", { className: "xw-tv-empty" }, String(error.message ?? error))));
      return;
    }
    if (this.fromBox) {
      this.showPivot(events);
      return;
    }
    request(this.model, "aggregate", { events }, { channel: "details" }).then((answer) => {
      if (!answer) return;
      const { content } = answer;
      if (content.start_us !== undefined) this.selectedSpan = [content.start_us, content.end_us];
      const span = this.selectionSpan();
      const rows = aggregateRows(content);
      this.details.replaceChildren(aggregateView(rows, {
        nEvents: events.length, span: span ? span[1] - span[0] : null, truncated: this.boxTruncated,
      }));
      this.details.dataset.event = "";
    }, (error) => this.details.replaceChildren(h("div", { className: "xw-tv-empty" }, String(error.message ?? error))));
  },

  showPivot(events) {
    request(this.model, "pivot", { events }, { channel: "details" }).then((answer) => {
      if (!answer) return;
      const { content } = answer;
      if (content.start_us !== undefined) this.selectedSpan = [content.start_us, content.end_us];
      const span = this.selectionSpan();
      this.details.replaceChildren(pivotView(rowsOf(content.rows), {
        nEvents: events.length, span: span ? span[1] - span[0] : null, truncated: this.boxTruncated,
        grouping: this.pivotGrouping ?? "section,track,name",
        onGroup: (grouping) => { this.pivotGrouping = grouping; this.showPivot(events); },
      }));
      this.details.dataset.event = "";
    }, (error) => this.details.replaceChildren(h("div", { className: "xw-tv-empty" }, String(error.message ?? error))));
  },
};
