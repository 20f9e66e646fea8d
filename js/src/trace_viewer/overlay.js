// Flow overlays: named edge sets the kernel lays over the timeline (TraceViewer.overlay_flows),
// drawn as flow arrows in one colour per overlay, picked by a click on an arrow, toggled from
// the toolbar. The window answer carries the shown overlays' edges in its last three buffers
// (docs/dev/trace_protocol.md). Pure parts here; the methods at the end are TraceView's.
import { typed } from "../lib/transport.js";
import { h } from "../lib/dom.js";
import { formatDuration, formatTime } from "./timescale.js";

/** Arrow colours of the overlays, by the order they were laid (kept apart from `theme.flow`). */
const LIGHT = ["#1565c0", "#6a1b9a", "#00838f", "#2e7d32", "#ad1457", "#4e342e"];
const DARK = ["#64b5f6", "#ce93d8", "#4dd0e1", "#81c784", "#f48fb1", "#bcaaa4"];
/** How near (px) a click must fall to an arrow's curve to pick it. */
export const PICK_PX = 5;
const CURVE_STEPS = 16;

export function overlayColor(position, dark) {
  const list = dark ? DARK : LIGHT;
  return list[position % list.length];
}

/** The overlay part of a window answer (buffers 14-16), or null when it has none. */
export function decodeOverlays(content, buffers) {
  const n = content.n_overlay_flows ?? 0;
  if (!n || buffers.length < 17) return null;
  return {
    n,
    names: content.overlays ?? [],
    labels: content.overlay_labels ?? [],
    t: typed(buffers[14], Float32Array),
    where: typed(buffers[15], Uint32Array),
    tag: typed(buffers[16], Uint32Array),
  };
}

/** The curve every flow arrow is drawn as: from (x0, y0) to (x1, y1), bending by `bend`. */
export function bendOf(x0, x1) {
  return Math.max(12, Math.min(80, Math.abs(x1 - x0) / 2));
}

/**
 * The arrows of one answer's overlays on screen: `place(track, depth)` gives a row's y or null,
 * `ox` the answer's x at its start, `tl` the timeline's box, `colors` name -> colour of the
 * overlays shown, `start` the answer's start (us). Each arrow: {x0, y0, x1, y1, color, from, to,
 * fromUs, toUs, fromTrack, toTrack, overlay, label}.
 */
export function overlayArrows(o, { place, ox, pxPerUs, tl, colors, start = 0 }) {
  const out = [];
  if (!o) return out;
  for (let k = 0; k < o.n; k++) {
    const overlay = o.names[o.tag[2 * k]];
    const color = colors.get(overlay);
    if (!color) continue;
    const x0 = ox + o.t[2 * k] * pxPerUs;
    const x1 = ox + o.t[2 * k + 1] * pxPerUs;
    if ((x0 < tl.x0 && x1 < tl.x0) || (x0 > tl.x1 && x1 > tl.x1)) continue;
    const w = o.where;
    const y0 = place(w[6 * k], w[6 * k + 1]);
    const y1 = place(w[6 * k + 3], w[6 * k + 4]);
    if (y0 === null || y1 === null) continue;
    if ((y0 < tl.y0 && y1 < tl.y0) || (y0 > tl.y1 && y1 > tl.y1)) continue;
    out.push({
      x0, y0, x1, y1, color, from: w[6 * k + 2], to: w[6 * k + 5], fromUs: start + o.t[2 * k], toUs: start + o.t[2 * k + 1],
      fromTrack: w[6 * k], toTrack: w[6 * k + 3], overlay, label: o.labels[o.tag[2 * k + 1]] ?? "",
    });
  }
  return out;
}

function curveDistance(a, x, y) {
  const bend = bendOf(a.x0, a.x1);
  const c = [a.x0, a.y0, a.x0 + bend, a.y0, a.x1 - bend, a.y1, a.x1, a.y1];
  let best = Infinity;
  for (let i = 0; i <= CURVE_STEPS; i++) {
    const s = i / CURVE_STEPS;
    const u = 1 - s;
    const b = [u * u * u, 3 * u * u * s, 3 * u * s * s, s * s * s];
    const px = b[0] * c[0] + b[1] * c[2] + b[2] * c[4] + b[3] * c[6];
    const py = b[0] * c[1] + b[1] * c[3] + b[2] * c[5] + b[3] * c[7];
    best = Math.min(best, Math.hypot(px - x, py - y));
  }
  return best;
}

/** Whether an arrow is drawn strong: both its ends selected (a picked arrow), or one of them
 * alone (the arrows of the one event selected). */
export function isChosen(a, selection) {
  const from = selection.has(a.from);
  const to = selection.has(a.to);
  return (from && to) || (selection.size === 1 && (from || to));
}

/** The arrow nearest (x, y) within PICK_PX, or null. */
export function pickArrow(arrows, x, y) {
  let best = null;
  let bestD = PICK_PX;
  for (const a of arrows) {
    const d = curveDistance(a, x, y);
    if (d <= bestD) {
      best = a;
      bestD = d;
    }
  }
  return best;
}

/** The details panel of a picked overlay arrow: its overlay, label and two ends. */
export function edgeView(edge, { onGo, trackName }) {
  const end = (title, event, us, track) => h("li", {}, `${title}: `,
    h("button", { className: "xw-tv-link", onclick: () => onGo(event) }, `event ${event}`),
    ` at ${formatTime(us, 1)} · ${trackName(track)}`);
  return h("div", { className: "xw-tv-detail", dataset: { overlay: edge.overlay } },
    h("div", { className: "xw-tv-title" }, `Overlay ${edge.overlay}`, edge.label ? ` · ${edge.label}` : ""),
    h("ul", { className: "xw-tv-flows" }, end("From", edge.from, edge.fromUs, edge.fromTrack),
      end("To", edge.to, edge.toUs, edge.toTrack)),
    h("div", {}, `${formatDuration(Math.abs(edge.toUs - edge.fromUs))} between their starts`));
}

/** The details' list of an event's overlay edges (the `details` answer's `overlays`). */
export function overlayLists(entries, { onGo, trackName }) {
  if (!entries?.length) return null;
  return h("div", { className: "xw-tv-block" },
    h("div", { className: "xw-tv-subtitle" }, `Overlays (${entries.length})`),
    h("ul", { className: "xw-tv-flows" }, entries.map((e) => h("li", {},
      `${e.overlay} ${e.direction === "in" ? "from" : "to"} `,
      h("button", { className: "xw-tv-link", onclick: () => onGo(e.event) }, e.label || `event ${e.event}`),
      ` at ${formatTime(e.start_us ?? 0, 0.001)} · ${trackName(e.track)}`))));
}

export const overlayMethods = {
  // The overlays the kernel says are laid ([{name, edges, shown, version}]) and their colours.
  overlaysFromModel() {
    this.overlayList = this.model.get("_overlays") ?? [];
    this.overlayPositions = new Map();
    this.overlayList.forEach((o, i) => {
      if (o.shown) this.overlayPositions.set(o.name, i);
    });
    this.el.dataset.overlays = this.overlayList.filter((o) => o.shown).map((o) => o.name).join("|");
    this.buildOverlayToggles();
    this.ensureData();
    this.requestDraw();
  },

  // What makes one answer's overlays differ from another's (the request key has it).
  overlayKey() {
    return (this.overlayList ?? []).filter((o) => o.shown).map((o) => `${o.name}\u0000${o.version}`).join("\u0001");
  },

  buildOverlayToggles() {
    if (!this.overlayBar) return;
    this.overlayBar.replaceChildren(...(this.overlayList ?? []).map((o, i) => {
      const box = h("input", { type: "checkbox", onchange: () => this.setOverlayShown(o.name, box.checked) });
      box.checked = Boolean(o.shown);
      const swatch = h("span", { className: "xw-tv-swatch" });
      swatch.style.background = overlayColor(i, this.theme?.dark);
      return h("label", { className: "xw-tv-check", title: `Overlay ${o.name}: ${o.edges.toLocaleString("en")} edges` }, box, swatch, o.name);
    }));
  },

  setOverlayShown(name, shown) {
    this.model.set("_overlays", (this.overlayList ?? []).map((o) => (o.name === name ? { ...o, shown } : o)));
    this.model.save_changes();
    this.overlaysFromModel();
  },

  // A click that hit no slice: the overlay arrow under it, if any, becomes the selection.
  pickOverlay(p) {
    const edge = pickArrow(this.drawnOverlays ?? [], p.x, p.y);
    if (!edge) return false;
    this.pickedEdge = edge;
    this.setSelection([edge.from, edge.to], true);
    return true;
  },

  showPickedEdge() {
    const edge = this.pickedEdge;
    this.details.replaceChildren(edgeView(edge, {
      onGo: (event) => this.goToEvent(event),
      trackName: (id) => {
        const t = this.tables.tracks.find((row) => row.id === id);
        return t ? `${t.section} · ${t.name}` : String(id);
      },
    }));
    this.details.dataset.event = "";
    this.details.dataset.overlay = edge.overlay;
  },
};
