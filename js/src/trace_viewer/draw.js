// Canvas2D drawing of one frame: axis, section and track labels, slices (merged runs hatched),
// counters, collapsed-section summaries, flows, selection, marks and bookmarks. The pinned rows
// are an area of their own above the scrolled ones. Text only through fillText.
import { AXIS_H, DEPTH_H, LABEL_BUTTON, SECTION_H, TRACK_PAD, depthCenter, firstRowBelow } from "./layout.js";
import { PALETTE_SIZE } from "./colors.js";
import { signatureForms } from "../lib/names.js";
import { fitLabel } from "./labels.js";
import { formatDuration, ticks } from "./timescale.js";
import { bendOf, isChosen, overlayArrows, overlayColor } from "./overlay.js";

const MIN_LABEL_W = 26;
const FONT_PX = 11;
const STRIP_W = 6;

/** Width-aware truncation of names, measured once per name and font. */
class TextFit {
  constructor() {
    this.cache = new Map();
    this.font = "";
    this.labels = new Map();
  }
  reset(ctx, font) {
    if (font !== this.font) {
      this.cache.clear();
      this.font = font;
      ctx.font = font;
      this.ellipsis = ctx.measureText("…").width;
    }
  }
  // The text to draw in `room` pixels: whole, a kernel signature's shorter form, cut with an
  // ellipsis, or null when nothing fits.
  fit(ctx, text, room) {
    let m = this.cache.get(text);
    if (!m) {
      const width = ctx.measureText(text).width;
      m = { width, forms: undefined };
      if (this.cache.size > 20000) this.cache.clear();
      this.cache.set(text, m);
    }
    if (m.width <= room) return text;
    // A kernel's C++ signature first drops what is not its function's name (lib/names.js).
    m.forms ??= (signatureForms(text) ?? []).map((form) => [form, ctx.measureText(form).width]);
    for (const [form, width] of m.forms) if (width <= room) return form;
    const [base, width] = m.forms.at(-1) ?? [text, m.width];
    const n = Math.floor((room - this.ellipsis) / ((width / Math.max(base.length, 1)) * 1.05));
    return n >= 2 ? `${base.slice(0, n)}…` : null;
  }
  // A track or section label for the label column (labels.js): measured exactly, cached per room.
  label(ctx, text, room) {
    const key = `${ctx.font}|${Math.round(room)}|${text}`;
    let fitted = this.labels.get(key);
    if (fitted === undefined) {
      fitted = fitLabel(text, room, (t) => ctx.measureText(t).width);
      if (this.labels.size > 5000) this.labels.clear();
      this.labels.set(key, fitted);
    }
    return fitted;
  }
}

function hatchPattern(ctx, dark, dpr) {
  const size = Math.round(6 * dpr);
  const tile = document.createElement("canvas");
  tile.width = size;
  tile.height = size;
  const t = tile.getContext("2d");
  t.strokeStyle = dark ? "rgba(255, 255, 255, 0.35)" : "rgba(0, 0, 0, 0.28)";
  t.lineWidth = Math.max(1, dpr);
  t.beginPath();
  t.moveTo(0, size);
  t.lineTo(size, 0);
  t.moveTo(-size / 2, size / 2);
  t.lineTo(size / 2, -size / 2);
  t.moveTo(size / 2, size * 1.5);
  t.lineTo(size * 1.5, size / 2);
  t.stroke();
  const pattern = ctx.createPattern(tile, "repeat");
  pattern.setTransform(new DOMMatrix().scale(1 / dpr));
  return pattern;
}

export class Renderer {
  constructor() {
    this.text = new TextFit();
    this.hatch = null;
    this.hatchKey = "";
  }

  /**
   * Draw `f` (see TraceView.draw): {ctx, width, height, dpr, theme, view, scrollY, layout,
   * layers and unknown (held.js heldLayers), names, selection, hover, mark, box, zoomBox, flows,
   * trackSection, labelW, hits ({names: Uint8Array by name id, tracks: Set} or null),
   * bookmarks ([{name, start_us, end_us}]), stats}.
   */
  draw(f) {
    const { ctx, width, height, theme } = f;
    const key = `${theme.dark}:${f.dpr}`;
    if (key !== this.hatchKey) {
      this.hatch = hatchPattern(ctx, theme.dark, f.dpr);
      this.hatchKey = key;
    }
    ctx.setTransform(f.dpr, 0, 0, f.dpr, 0, 0);
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, width, height);
    const tl = { x0: f.labelW, x1: width, y0: AXIS_H, y1: height };
    const span = Math.max(f.view.end - f.view.start, 1e-9);
    const pxPerUs = (tl.x1 - tl.x0) / span;
    const xOf = (us) => tl.x0 + (us - f.view.start) * pxPerUs;
    const axis = ticks(f.view.start, f.view.end, tl.x1 - tl.x0, 110);
    // Pinned rows (first in the layout, pinnedH high) stay under the axis; the others scroll
    // below them.
    const rows = f.layout.rows;
    const pinnedH = Math.min(f.layout.pinnedH ?? 0, tl.y1 - tl.y0);
    const pinned = [];
    for (let i = 0; i < rows.length && rows[i].pinned; i++) pinned.push(rows[i]);
    const scrolled = [];
    for (let i = firstRowBelow(rows, f.scrollY + pinnedH); i < rows.length && rows[i].y - f.scrollY < tl.y1 - tl.y0; i++) scrolled.push(rows[i]);
    const yOf = (row) => tl.y0 + row.y - (row.pinned ? 0 : f.scrollY);
    const scrollArea = { ...tl, y0: tl.y0 + pinnedH };
    const areas = [[scrolled, scrollArea]];
    if (pinned.length) areas.push([pinned, { ...tl, y1: tl.y0 + pinnedH }]);

    f.stats.slicesDrawn = 0;
    f.stats.flowsDrawn = 0;
    f.stats.hitsMarked = 0;
    for (const [visible, area] of areas) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(area.x0, area.y0, area.x1 - area.x0, area.y1 - area.y0);
      ctx.clip();
      this.rowBands(f, visible, yOf, area);
      ctx.strokeStyle = theme.grid;
      ctx.lineWidth = 1;
      ctx.beginPath();
      for (const t of axis.values) {
        const x = Math.round(xOf(t)) + 0.5;
        ctx.moveTo(x, area.y0);
        ctx.lineTo(x, area.y1);
      }
      ctx.stroke();
      this.unknown(f, area);
      this.eachLayer(f, area, (lay) => {
        this.slices(f, visible, yOf, area, pxPerUs, lay);
        this.counters(f, visible, yOf, area, pxPerUs, lay);
        this.summaries(f, visible, yOf, area, pxPerUs, lay);
      });
      ctx.restore();
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(tl.x0, tl.y0, tl.x1 - tl.x0, tl.y1 - tl.y0);
    ctx.clip();
    if (f.flows) this.eachLayer(f, tl, (lay) => this.flowArrows(f, yOf, tl, pxPerUs, lay));
    f.stats.overlayArrows = [];
    if (f.overlays?.size) this.eachLayer(f, tl, (lay) => this.overlayFlows(f, yOf, tl, pxPerUs, lay));
    this.overlays(f, tl, xOf);
    if (f.focus) this.focusMarker(f, yOf, tl, xOf);
    this.bookmarkLines(f, tl, xOf);
    ctx.restore();

    this.labels(f, scrolled, yOf, scrollArea, true);
    if (pinned.length) {
      this.labels(f, pinned, yOf, { ...tl, y1: tl.y0 + pinnedH }, false);
      ctx.strokeStyle = theme.border1;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.moveTo(0, tl.y0 + pinnedH - 1);
      ctx.lineTo(tl.x1, tl.y0 + pinnedH - 1);
      ctx.stroke();
      ctx.lineWidth = 1;
    }
    if (f.hits) this.hitStrip(f, tl);
    this.axis(f, tl, axis, xOf, span);
    this.bookmarkFlags(f, tl, xOf);
    f.stats.axis = axis.values.map(axis.label);
  }

  // fn(lay) for each held answer, clipped to where it lies on top, shifted and scaled to this
  // view, inside `area`'s rows.
  eachLayer(f, area, fn) {
    const { ctx } = f;
    for (const layer of f.layers) {
      const spans = layer.spans;
      const x0 = area.x0;
      const lay = { tile: layer.tile, ox: x0 + layer.offset, lo: x0 + spans[0][0], hi: x0 + spans[spans.length - 1][1] };
      ctx.save();
      ctx.beginPath();
      for (const [a, b] of spans) ctx.rect(x0 + a, area.y0, b - a, area.y1 - area.y0);
      ctx.clip();
      fn(lay);
      ctx.restore();
    }
  }

  // Each bookmark: a dashed line at its time, or a band over its span with its edges.
  bookmarkLines(f, tl, xOf) {
    const { ctx, theme } = f;
    if (!f.bookmarks?.length) return;
    ctx.strokeStyle = theme.bookmark;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    for (const b of f.bookmarks) {
      const xs = xOf(b.start_us);
      const xe = xOf(b.end_us);
      if (xe < tl.x0 - 1 || xs > tl.x1 + 1) continue;
      if (xe - xs >= 1) {
        ctx.fillStyle = theme.bookmarkBand;
        ctx.fillRect(xs, tl.y0, xe - xs, tl.y1 - tl.y0);
        ctx.moveTo(Math.round(xe) + 0.5, tl.y0);
        ctx.lineTo(Math.round(xe) + 0.5, tl.y1);
      }
      ctx.moveTo(Math.round(xs) + 0.5, tl.y0);
      ctx.lineTo(Math.round(xs) + 0.5, tl.y1);
    }
    ctx.stroke();
    ctx.setLineDash([]);
  }

  // Each bookmark's name on a flag in the axis, at its start.
  bookmarkFlags(f, tl, xOf) {
    const { ctx, theme } = f;
    if (!f.bookmarks?.length) return;
    ctx.save();
    ctx.beginPath();
    ctx.rect(tl.x0, 0, tl.x1 - tl.x0, AXIS_H);
    ctx.clip();
    const font = `600 10px ${theme.font}`;
    ctx.font = font;
    this.text.reset(ctx, font);
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    for (const b of f.bookmarks) {
      const x = xOf(b.start_us);
      if (x < tl.x0 - 120 || x > tl.x1) continue;
      const text = this.text.label(ctx, b.name, 110) ?? "";
      const w = ctx.measureText(text).width + 10;
      ctx.fillStyle = theme.bookmark;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, AXIS_H - 14);
      ctx.lineTo(x + w, AXIS_H - 14);
      ctx.lineTo(x + w, AXIS_H - 2);
      ctx.lineTo(x + 4, AXIS_H - 2);
      ctx.closePath();
      ctx.fill();
      ctx.fillStyle = "#ffffff";
      ctx.fillText(text, x + 5, AXIS_H - 8);
    }
    ctx.restore();
  }

  // Time in the trace that no held answer covers yet (its answer is on its way): hatched.
  unknown(f, tl) {
    if (!f.unknown.length) return;
    const { ctx } = f;
    ctx.globalAlpha = 0.5;
    ctx.fillStyle = this.hatch;
    for (const [x0, x1] of f.unknown) ctx.fillRect(tl.x0 + x0, tl.y0, x1 - x0, tl.y1 - tl.y0);
    ctx.globalAlpha = 1;
  }

  rowBands(f, visible, yOf, tl) {
    const { ctx, theme } = f;
    ctx.fillStyle = theme.sectionBg;
    for (const row of visible) {
      if (row.type === "section") ctx.fillRect(tl.x0, yOf(row), tl.x1 - tl.x0, row.h);
    }
    ctx.strokeStyle = theme.border;
    ctx.beginPath();
    for (const row of visible) {
      const y = Math.round(yOf(row) + row.h) - 0.5;
      ctx.moveTo(tl.x0, y);
      ctx.lineTo(tl.x1, y);
    }
    ctx.stroke();
  }

  slices(f, visible, yOf, tl, pxPerUs, lay) {
    const { ctx, theme } = f;
    const { tile, ox } = lay;
    const fills = Array.from({ length: PALETTE_SIZE }, () => null);
    const merged = Array.from({ length: PALETTE_SIZE }, () => null);
    const hatch = new Path2D();
    const outline = new Path2D();
    const marked = new Path2D();
    const hitNames = f.hits?.names;
    let nMarked = 0;
    const labels = [];
    const selecting = f.selection.size > 0;
    const minW = 1 / f.dpr;
    let nDrawn = 0;
    for (const row of visible) {
      if (row.type !== "track" || row.counter) continue;
      const range = tile.slices.get(row.trackId);
      if (!range) continue;
      const top = yOf(row) + TRACK_PAD;
      // Slices of a depth come in time order. Zoomed out past the answer's resolution, many
      // land in one device pixel: the first one painted there stands for the rest.
      let lastDepth = -1;
      let lastPx = -Infinity;
      for (let i = range[0]; i < range[1]; i++) {
        let xs = ox + tile.sStart[i] * pxPerUs;
        let xe = xs + tile.sDur[i] * pxPerUs;
        if (xe < lay.lo || xs > lay.hi) continue;
        const depth = tile.sDepth[i];
        if (xe - xs < minW) {
          const px = Math.floor(xs * f.dpr);
          if (depth === lastDepth && px <= lastPx && !(selecting && f.selection.has(tile.sEvent[i])) && !hitNames?.[tile.sName[i]]) continue;
          lastPx = px;
        } else {
          lastPx = Math.floor(xe * f.dpr) - 1;
        }
        lastDepth = depth;
        if (xs < tl.x0 - 2) xs = tl.x0 - 2;
        if (xe > tl.x1 + 2) xe = tl.x1 + 2;
        const w = xe - xs < minW ? minW : xe - xs;
        const y = top + depth * DEPTH_H + 1;
        const c = tile.color[i];
        nDrawn++;
        if (tile.sCount[i] > 1) {
          (merged[c] ??= new Path2D()).rect(xs, y, w, DEPTH_H - 2);
          hatch.rect(xs, y, w, DEPTH_H - 2);
        } else {
          (fills[c] ??= new Path2D()).rect(xs, y, w, DEPTH_H - 2);
          if (w >= MIN_LABEL_W) labels.push(i, xs, w, y);
        }
        if (selecting && f.selection.has(tile.sEvent[i])) outline.rect(xs + 0.5, y + 0.5, Math.max(w - 1, 1), DEPTH_H - 3);
        if (hitNames?.[tile.sName[i]]) {
          marked.rect(xs - 1, y + DEPTH_H - 5, Math.max(w, 1) + 2, 3);
          nMarked++;
        }
      }
    }
    for (let c = 0; c < PALETTE_SIZE; c++) {
      if (fills[c]) {
        ctx.fillStyle = theme.palette.fill[c];
        ctx.fill(fills[c]);
      }
      if (merged[c]) {
        ctx.fillStyle = theme.palette.merged[c];
        ctx.fill(merged[c]);
      }
    }
    ctx.fillStyle = this.hatch;
    ctx.fill(hatch);

    const font = `${FONT_PX}px ${theme.font}`;
    this.text.reset(ctx, font);
    ctx.font = font;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    ctx.fillStyle = theme.palette.text[0];
    for (let k = 0; k < labels.length; k += 4) {
      const i = labels[k];
      const name = f.names.name(tile.sName[i]);
      if (name === undefined) continue;
      const xs = Math.max(labels[k + 1], tl.x0);
      const room = Math.min(labels[k + 1] + labels[k + 2], tl.x1) - xs - 6;
      if (room < MIN_LABEL_W - 6) continue;
      const text = this.text.fit(ctx, name, room);
      if (text) ctx.fillText(text, xs + 3, labels[k + 3] + (DEPTH_H - 2) / 2 + 0.5);
    }
    if (nMarked) {
      // Every search hit drawn: a bar under the slice (the current hit also has the focus box).
      ctx.fillStyle = theme.accent;
      ctx.fill(marked);
    }
    f.stats.hitsMarked += nMarked;
    if (selecting) {
      ctx.strokeStyle = theme.selection;
      ctx.lineWidth = 2;
      ctx.stroke(outline);
    }
    if (f.hover && f.hover.tile === tile && f.hover.slice >= 0) {
      const i = f.hover.slice;
      const row = f.layout.trackRow.get(f.hover.track);
      if (row) {
        const xs = Math.max(ox + tile.sStart[i] * pxPerUs, tl.x0 - 2);
        const xe = Math.min(xs + Math.max(tile.sDur[i] * pxPerUs, 1), tl.x1 + 2);
        ctx.strokeStyle = theme.fg;
        ctx.lineWidth = 1;
        ctx.strokeRect(xs + 0.5, yOf(row) + TRACK_PAD + tile.sDepth[i] * DEPTH_H + 1.5, Math.max(xe - xs - 1, 1), DEPTH_H - 4);
      }
    }
    f.stats.slicesDrawn += nDrawn;
  }

  counters(f, visible, yOf, tl, pxPerUs, lay) {
    const { ctx, theme } = f;
    const { tile, ox } = lay;
    for (const row of visible) {
      if (!row.counter) continue;
      const range = tile.counters.get(row.trackId);
      if (!range || range[1] <= range[0]) continue;
      const [min, max] = tile.counterRange.get(row.trackId);
      const top = yOf(row) + 4;
      const base = yOf(row) + row.h - 3;
      const yv = (v) => base - ((v - min) / (max - min)) * (base - top);
      const x = (i) => ox + tile.cT[i] * pxPerUs;
      const end = Math.min(ox + (tile.end - tile.start) * pxPerUs, tl.x1 + 2);
      const area = new Path2D();
      const line = new Path2D();
      area.moveTo(x(range[0]), base);
      for (let i = range[0]; i < range[1]; i++) {
        const xi = x(i);
        const xn = i + 1 < range[1] ? x(i + 1) : end;
        if (xn < tl.x0 - 2 || xi > tl.x1 + 2) continue;
        area.lineTo(xi, yv(tile.cMax[i]));
        area.lineTo(xn, yv(tile.cMax[i]));
        line.moveTo(xi, yv(tile.cLast[i]));
        line.lineTo(xn, yv(tile.cLast[i]));
      }
      area.lineTo(end, base);
      area.closePath();
      ctx.fillStyle = theme.counter;
      ctx.fill(area);
      ctx.strokeStyle = theme.counterLine;
      ctx.lineWidth = 1.25;
      ctx.stroke(line);
    }
  }

  summaries(f, visible, yOf, tl, pxPerUs, lay) {
    const { ctx, theme } = f;
    const { tile, ox } = lay;
    const path = new Path2D();
    for (const row of visible) {
      if (row.type !== "section" || !row.collapsed) continue;
      const range = tile.summaries.get(row.sectionId);
      if (!range) continue;
      const y = yOf(row) + 6;
      for (let i = range[0]; i < range[1]; i++) {
        const xs = Math.max(ox + tile.sumStart[i] * pxPerUs, tl.x0 - 2);
        const xe = Math.min(ox + (tile.sumStart[i] + tile.sumDur[i]) * pxPerUs, tl.x1 + 2);
        if (xe < lay.lo || xs > lay.hi) continue;
        path.rect(xs, y, Math.max(xe - xs, 1 / f.dpr), SECTION_H - 12);
      }
    }
    ctx.fillStyle = theme.summary;
    ctx.fill(path);
  }

  // The y a flow end at (track, depth) is drawn at, or null where its row is not laid out.
  flowPlace(f, yOf) {
    return (track, depth) => {
      const row = f.layout.trackRow.get(track) ?? f.layout.sectionRow.get(f.trackSection.get(track));
      return row ? yOf(row) + depthCenter(row, depth) - row.y : null;
    };
  }

  // The shown overlays' arrows (overlay.js), each overlay in its colour; an arrow with a selected
  // end drawn strong. The arrows drawn are kept in f.stats.overlayArrows for a click to pick.
  overlayFlows(f, yOf, tl, pxPerUs, lay) {
    const { ctx, theme } = f;
    const colors = new Map([...f.overlays].map(([name, i]) => [name, overlayColor(i, theme.dark)]));
    const arrows = overlayArrows(lay.tile.overlay, { place: this.flowPlace(f, yOf), ox: lay.ox, pxPerUs, tl, colors, start: lay.tile.start });
    for (const color of new Set(arrows.map((a) => a.color))) {
      for (const strong of [false, true]) {
        const path = new Path2D();
        const heads = new Path2D();
        for (const a of arrows) {
          if (a.color !== color || strong !== isChosen(a, f.selection)) continue;
          const bend = bendOf(a.x0, a.x1);
          path.moveTo(a.x0, a.y0);
          path.bezierCurveTo(a.x0 + bend, a.y0, a.x1 - bend, a.y1, a.x1, a.y1);
          arrowHead(heads, a.x1 - bend, a.y1, a.x1, a.y1);
        }
        ctx.strokeStyle = color;
        ctx.fillStyle = color;
        ctx.globalAlpha = strong ? 1 : 0.8;
        ctx.lineWidth = strong ? 2.5 : 1.5;
        ctx.stroke(path);
        ctx.fill(heads);
      }
    }
    ctx.globalAlpha = 1;
    f.stats.overlayArrows.push(...arrows);
  }

  flowArrows(f, yOf, tl, pxPerUs, lay) {
    const { ctx, theme } = f;
    const { tile, ox } = lay;
    const where = tile.flowWhere;
    const place = this.flowPlace(f, yOf);
    const normal = new Path2D();
    const heads = new Path2D();
    const strong = new Path2D();
    const strongHeads = new Path2D();
    let drawn = 0;
    for (let k = 0; k < tile.nFlows; k++) {
      const x0 = ox + tile.flowT[2 * k] * pxPerUs;
      const x1 = ox + tile.flowT[2 * k + 1] * pxPerUs;
      if ((x0 < tl.x0 && x1 < tl.x0) || (x0 > tl.x1 && x1 > tl.x1)) continue;
      const y0 = place(where[6 * k], where[6 * k + 1]);
      const y1 = place(where[6 * k + 3], where[6 * k + 4]);
      if (y0 === null || y1 === null) continue;
      if ((y0 < tl.y0 && y1 < tl.y0) || (y0 > tl.y1 && y1 > tl.y1)) continue;
      const chosen = f.selection.has(where[6 * k + 2]) || f.selection.has(where[6 * k + 5]);
      const path = chosen ? strong : normal;
      const bend = bendOf(x0, x1);
      path.moveTo(x0, y0);
      path.bezierCurveTo(x0 + bend, y0, x1 - bend, y1, x1, y1);
      arrowHead(chosen ? strongHeads : heads, x1 - bend, y1, x1, y1);
      drawn++;
    }
    f.stats.flowsDrawn += drawn;
    ctx.strokeStyle = theme.flow;
    ctx.fillStyle = theme.flow;
    ctx.globalAlpha = 0.75;
    ctx.lineWidth = 1.25;
    ctx.stroke(normal);
    ctx.fill(heads);
    ctx.globalAlpha = 1;
    ctx.lineWidth = 2.5;
    ctx.stroke(strong);
    ctx.fill(strongHeads);
  }

  overlays(f, tl, xOf) {
    const { ctx, theme } = f;
    if (f.mark) {
      const xs = xOf(f.mark.start);
      const xe = xOf(f.mark.end);
      ctx.fillStyle = theme.mark;
      ctx.fillRect(xs, tl.y0, xe - xs, tl.y1 - tl.y0);
      ctx.strokeStyle = theme.markEdge;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(Math.round(xs) + 0.5, tl.y0);
      ctx.lineTo(Math.round(xs) + 0.5, tl.y1);
      ctx.moveTo(Math.round(xe) - 0.5, tl.y0);
      ctx.lineTo(Math.round(xe) - 0.5, tl.y1);
      ctx.stroke();
    }
    if (f.zoomBox) {
      const xs = xOf(f.zoomBox.start);
      const xe = xOf(f.zoomBox.end);
      ctx.fillStyle = theme.box;
      ctx.fillRect(xs, tl.y0, xe - xs, tl.y1 - tl.y0);
    }
    if (f.box) {
      ctx.fillStyle = theme.box;
      ctx.strokeStyle = theme.accent;
      ctx.lineWidth = 1;
      const { x0, y0, x1, y1 } = f.box;
      ctx.fillRect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
      ctx.strokeRect(Math.min(x0, x1) + 0.5, Math.min(y0, y1) + 0.5, Math.abs(x1 - x0), Math.abs(y1 - y0));
    }
  }

  // The event a search or a flow link went to: it stays findable even when under a pixel wide.
  focusMarker(f, yOf, tl, xOf) {
    const { ctx, theme } = f;
    const { start, end, track, depth } = f.focus;
    const xs = xOf(start);
    const xe = Math.max(xOf(end), xs + 3);
    if (xe < tl.x0 - 20 || xs > tl.x1 + 20) return;
    ctx.strokeStyle = theme.accent;
    ctx.globalAlpha = 0.55;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(Math.round(xs) + 0.5, tl.y0);
    ctx.lineTo(Math.round(xs) + 0.5, tl.y1);
    ctx.stroke();
    ctx.globalAlpha = 1;
    const row = f.layout.trackRow.get(track);
    if (!row || depth < 0) return;
    const y = yOf(row) + TRACK_PAD + depth * DEPTH_H;
    ctx.lineWidth = 2;
    ctx.strokeRect(xs - 1, y, xe - xs + 2, DEPTH_H);
    ctx.fillStyle = theme.accent;
    ctx.beginPath();
    ctx.moveTo(xs - 5, y - 7);
    ctx.lineTo(xs + 5, y - 7);
    ctx.lineTo(xs, y - 1);
    ctx.closePath();
    ctx.fill();
  }

  // The label column beside `visible` rows, inside `tl`'s height; `sticky`: the scrolled area,
  // whose top keeps its section's name.
  labels(f, visible, yOf, tl, sticky) {
    const { ctx, theme } = f;
    const labelW = f.labelW;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, tl.y0, labelW, tl.y1 - tl.y0);
    ctx.clip();
    ctx.fillStyle = theme.panel;
    ctx.fillRect(0, tl.y0, labelW, tl.y1 - tl.y0);
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    const bold = `600 12px ${theme.font}`;
    const plain = `${FONT_PX}px ${theme.font}`;
    for (const row of visible) {
      const y = yOf(row);
      if (row.type === "section") {
        ctx.fillStyle = theme.sectionBg;
        ctx.fillRect(0, y, labelW, row.h);
        ctx.fillStyle = theme.fg2;
        triangle(ctx, 10, y + row.h / 2, row.collapsed);
        ctx.font = bold;
        ctx.fillStyle = theme.fg;
        this.text.reset(ctx, bold);
        const suffix = row.collapsed && row.kind !== "pod-host" ? ` (${row.nTracks})` : "";
        const text = this.text.label(ctx, row.label + suffix, labelW - 28);
        if (text) ctx.fillText(text, 20, y + row.h / 2 + 0.5);
      } else {
        ctx.font = plain;
        ctx.fillStyle = theme.fg2;
        this.text.reset(ctx, plain);
        const text = this.text.label(ctx, row.label, labelW - 30);
        const mid = y + Math.min(row.h, DEPTH_H + 2 * TRACK_PAD) / 2;
        if (text) ctx.fillText(text, 22, mid + 0.5);
        if (f.hits?.tracks.has(row.trackId)) {
          ctx.fillStyle = theme.accent;
          ctx.fillRect(12, mid - 3, 6, 6);
        } else if (row.pinned) {
          pinGlyph(ctx, 12, mid, theme.fg2);
        }
        const hovered = f.hover?.label && f.hover.row === row;
        if (hovered) this.labelButtons(f, mid, row.pinned, f.hover.button);
      }
      ctx.strokeStyle = theme.border;
      ctx.beginPath();
      ctx.moveTo(0, Math.round(y + row.h) - 0.5);
      ctx.lineTo(labelW, Math.round(y + row.h) - 0.5);
      ctx.stroke();
    }
    const top = visible[0];
    if (sticky && top && (top.type === "track" || yOf(top) < tl.y0)) this.stickyHeader(f, top, tl, bold);
    ctx.restore();
    ctx.strokeStyle = theme.border1;
    ctx.beginPath();
    ctx.moveTo(labelW - 0.5, 0);
    ctx.lineTo(labelW - 0.5, tl.y1);
    ctx.stroke();
  }

  // A hovered track label's pin and hide buttons (layout.js labelButtonAt places them).
  labelButtons(f, mid, pinned, active) {
    const { ctx, theme } = f;
    const size = LABEL_BUTTON;
    const hideX = f.labelW - 4 - size;
    const pinX = f.labelW - 6 - 2 * size;
    ctx.fillStyle = theme.panel;
    ctx.fillRect(pinX - 4, mid - size / 2 - 1, 2 * size + 10, size + 2);
    for (const [x, which] of [[pinX, "pin"], [hideX, "hide"]]) {
      ctx.fillStyle = active === which ? theme.sectionBg : theme.panel;
      ctx.strokeStyle = active === which ? theme.fg2 : theme.border;
      ctx.lineWidth = 1;
      roundRect(ctx, x + 0.5, mid - size / 2 + 0.5, size - 1, size - 1, 3);
      ctx.fill();
      ctx.stroke();
    }
    pinGlyph(ctx, pinX + size / 2, mid, pinned ? theme.accent : theme.fg2);
    ctx.strokeStyle = theme.fg2;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    const c = hideX + size / 2;
    ctx.moveTo(c - 3.5, mid - 3.5);
    ctx.lineTo(c + 3.5, mid + 3.5);
    ctx.moveTo(c + 3.5, mid - 3.5);
    ctx.lineTo(c - 3.5, mid + 3.5);
    ctx.stroke();
    ctx.lineWidth = 1;
  }

  // The name of the section whose tracks fill the top of the view, its header scrolled away.
  stickyHeader(f, top, tl, font) {
    const { ctx, theme } = f;
    const labelW = f.labelW;
    const header = f.layout.sectionRow.get(top.sectionId);
    if (!header) return;
    const h = 18;
    ctx.fillStyle = theme.panel;
    ctx.fillRect(0, tl.y0, labelW - 1, h);
    ctx.fillStyle = theme.sectionBg;
    ctx.fillRect(0, tl.y0, labelW - 1, h);
    ctx.strokeStyle = theme.border;
    ctx.beginPath();
    ctx.moveTo(0, tl.y0 + h - 0.5);
    ctx.lineTo(labelW, tl.y0 + h - 0.5);
    ctx.stroke();
    ctx.font = font;
    ctx.fillStyle = theme.fg;
    this.text.reset(ctx, font);
    const text = this.text.label(ctx, header.label, labelW - 16);
    if (text) ctx.fillText(text, 8, tl.y0 + h / 2 + 0.5);
  }

  // The scrollbar's stand-in at the timeline's right edge: where the view sits in all the rows,
  // and a tick for each track with search hits (its section's place when that is collapsed).
  hitStrip(f, tl) {
    const { ctx, theme, layout } = f;
    const total = Math.max(layout.height, 1);
    const h = tl.y1 - tl.y0;
    const x = tl.x1 - STRIP_W;
    ctx.fillStyle = theme.panel;
    ctx.globalAlpha = 0.8;
    ctx.fillRect(x, tl.y0, STRIP_W, h);
    ctx.globalAlpha = 1;
    ctx.fillStyle = theme.fg3;
    ctx.fillRect(x + 1, tl.y0 + (f.scrollY / total) * h, STRIP_W - 2, Math.max(4, Math.min(1, h / total) * h));
    ctx.fillStyle = theme.accent;
    const seen = new Set();
    for (const track of f.hits.tracks) {
      const row = layout.trackRow.get(track) ?? layout.sectionRow.get(f.trackSection.get(track));
      if (!row || seen.has(row)) continue;
      seen.add(row);
      ctx.fillRect(x, tl.y0 + (row.y / total) * h, STRIP_W, 2);
    }
    f.stats.hitRows = seen.size;
  }

  axis(f, tl, axis, xOf, span) {
    const { ctx, theme } = f;
    ctx.fillStyle = theme.panel;
    ctx.fillRect(0, 0, tl.x1, AXIS_H);
    ctx.strokeStyle = theme.border1;
    ctx.beginPath();
    ctx.moveTo(0, AXIS_H - 0.5);
    ctx.lineTo(tl.x1, AXIS_H - 0.5);
    ctx.stroke();
    ctx.font = `${FONT_PX}px ${theme.font}`;
    ctx.textBaseline = "middle";
    ctx.fillStyle = theme.fg2;
    ctx.fillText(`span ${formatDuration(span)}`, 10, AXIS_H / 2);
    ctx.save();
    ctx.beginPath();
    ctx.rect(tl.x0, 0, tl.x1 - tl.x0, AXIS_H);
    ctx.clip();
    ctx.strokeStyle = theme.fg3;
    ctx.beginPath();
    for (const t of axis.values) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.moveTo(x, AXIS_H - 8);
      ctx.lineTo(x, AXIS_H);
    }
    ctx.stroke();
    ctx.fillStyle = theme.fg;
    for (const t of axis.values) ctx.fillText(axis.label(t), xOf(t) + 4, AXIS_H / 2 - 2);
    if (f.mark) {
      const xs = Math.max(xOf(f.mark.start), tl.x0);
      const xe = Math.min(xOf(f.mark.end), tl.x1);
      const text = f.mark.label ?? formatDuration(f.mark.end - f.mark.start);
      const w = ctx.measureText(text).width + 12;
      const cx = Math.min(Math.max((xs + xe) / 2, tl.x0 + w / 2), tl.x1 - w / 2);
      ctx.fillStyle = theme.markEdge;
      roundRect(ctx, cx - w / 2, 4, w, AXIS_H - 10, 4);
      ctx.fill();
      ctx.fillStyle = "#1a1a1a";
      ctx.textAlign = "center";
      ctx.fillText(text, cx, AXIS_H / 2 - 1);
      ctx.textAlign = "left";
    }
    ctx.restore();
  }
}

// A push pin: a round head on a short needle, centred at (x, y).
function pinGlyph(ctx, x, y, colour) {
  ctx.fillStyle = colour;
  ctx.strokeStyle = colour;
  ctx.beginPath();
  ctx.arc(x, y - 2, 3.2, 0, 2 * Math.PI);
  ctx.fill();
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.moveTo(x, y + 1);
  ctx.lineTo(x, y + 6);
  ctx.stroke();
  ctx.lineWidth = 1;
}

function triangle(ctx, x, y, collapsed) {
  ctx.beginPath();
  if (collapsed) {
    ctx.moveTo(x - 3, y - 5);
    ctx.lineTo(x + 4, y);
    ctx.lineTo(x - 3, y + 5);
  } else {
    ctx.moveTo(x - 5, y - 3);
    ctx.lineTo(x + 5, y - 3);
    ctx.lineTo(x, y + 4);
  }
  ctx.closePath();
  ctx.fill();
}

function arrowHead(path, fromX, fromY, x, y) {
  const angle = Math.atan2(y - fromY, x - fromX);
  const size = 7;
  path.moveTo(x, y);
  path.lineTo(x - size * Math.cos(angle - 0.4), y - size * Math.sin(angle - 0.4));
  path.lineTo(x - size * Math.cos(angle + 0.4), y - size * Math.sin(angle + 0.4));
  path.closePath();
}

function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  ctx.moveTo(x + r, y);
  ctx.arcTo(x + w, y, x + w, y + h, r);
  ctx.arcTo(x + w, y + h, x, y + h, r);
  ctx.arcTo(x, y + h, x, y, r);
  ctx.arcTo(x, y, x + w, y, r);
  ctx.closePath();
}
