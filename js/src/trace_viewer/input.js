// Mouse, wheel and keyboard on the timeline, and what is under the mouse. Methods of TraceView
// (view.js), kept apart because they are the widget's whole input vocabulary.
import { h } from "../lib/dom.js";
import { isTextField } from "../lib/keys.js";
import { sliceTooltip } from "./dom.js";
import { AXIS_H, contentY, depthAt, labelButtonAt, rowAtScreen } from "./layout.js";
import { formatTime } from "./timescale.js";

const TOOL_KEYS = { 1: "select", "!": "select", 2: "pan", "@": "pan", 3: "zoom", "#": "zoom", 4: "timing", $: "timing" };
const HOLD_KEYS = new Set(["w", "a", "s", "d"]);
const CLICK_SLOP_PX = 3;
const LABEL_EDGE_PX = 4;
// A held key repeats its tap (1.25x zoom, a tenth of the view) this often per second: about 4x
// zoom and one view width of pan a second.
const TAPS_PER_SECOND = { w: 6.2, s: 6.2, a: 10, d: 10 };
const HOLD_AFTER_MS = 200;

export const inputMethods = {
  local(e) {
    const r = this.stage.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  },

  pointerDown(e) {
    if (e.button !== 0 || e.target !== this.canvas) return;
    this.stage.focus({ preventScroll: true });
    const p = this.local(e);
    if (this.onLabelEdge(p)) {
      this.stage.setPointerCapture(e.pointerId);
      this.drag = { ...p, resize: this.labelW, moved: false };
      return;
    }
    if (p.x < this.labelW) {
      const row = p.y >= AXIS_H ? this.rowAtY(p.y) : null;
      if (row?.type === "section") this.toggleSection(row.sectionId);
      else if (row?.type === "track") this.labelButton(row, labelButtonAt(p.x, this.labelW));
      return;
    }
    this.stage.setPointerCapture(e.pointerId);
    this.drag = { ...p, t0: this.timeAt(p.x), view: { ...this.view }, scrollY: this.scrollY, moved: false };
    this.setHover(null);
  },

  // The row at stage height y (pinned rows stay put, the others scroll).
  rowAtY(y) {
    return rowAtScreen(this.layout, y - AXIS_H, this.scrollY);
  },

  // A click on a track label's pin or hide button (drawn while the label is hovered).
  labelButton(row, button) {
    if (button === "pin") this.togglePin(row.trackId);
    else if (button === "hide") this.hideTrack(row.trackId);
  },

  // The label column's right edge (a few pixels either side), where a drag resizes it.
  onLabelEdge(p) {
    return p.y >= 0 && Math.abs(p.x - this.labelW) <= LABEL_EDGE_PX;
  },

  pointerMove(e) {
    const p = this.local(e);
    this.mouse = p;
    const drag = this.drag;
    if (!drag) {
      this.stage.classList.toggle("xw-tv-resizing", this.onLabelEdge(p));
      return this.hoverAt(p);
    }
    if (drag.resize !== undefined) return this.setLabelWidth(drag.resize + p.x - drag.x);
    if (!drag.moved && Math.hypot(p.x - drag.x, p.y - drag.y) < CLICK_SLOP_PX) return;
    drag.moved = true;
    const t = this.timeAt(Math.max(this.labelW, Math.min(this.width, p.x)));
    if (this.tool === "pan") {
      const usPerPx = (drag.view.end - drag.view.start) / this.timelineWidth;
      const dx = (p.x - drag.x) * usPerPx;
      this.setView(drag.view.start - dx, drag.view.end - dx);
      this.scrollY = drag.scrollY - (p.y - drag.y);
      this.clampScroll();
    } else if (this.tool === "zoom") {
      this.zoomBox = { start: Math.min(drag.t0, t), end: Math.max(drag.t0, t) };
    } else if (this.tool === "timing") {
      this.mark = { start: Math.min(drag.t0, t), end: Math.max(drag.t0, t) };
    } else {
      this.box = { x0: drag.x, y0: Math.max(drag.y, AXIS_H), x1: Math.max(this.labelW, p.x), y1: Math.max(AXIS_H, p.y) };
    }
    this.requestDraw();
  },

  pointerUp(e) {
    const drag = this.drag;
    if (!drag) return;
    this.drag = null;
    if (this.stage.hasPointerCapture(e.pointerId)) this.stage.releasePointerCapture(e.pointerId);
    if (drag.resize !== undefined) return this.ensureData();
    if (!drag.moved) return this.click(drag, e.ctrlKey || e.metaKey || e.shiftKey);
    if (this.tool === "zoom" && this.zoomBox) {
      const { start, end } = this.zoomBox;
      this.zoomBox = null;
      if (Math.abs(this.xOf(end) - this.xOf(start)) >= 3) this.setView(start, end);
    } else if (this.tool === "select" && this.box) {
      const box = this.box;
      this.box = null;
      this.selectBox(box, e.ctrlKey || e.metaKey);
    }
    this.requestDraw();
  },

  cancelDrag() {
    this.drag = null;
    this.box = null;
    this.zoomBox = null;
    this.requestDraw();
  },

  wheel(e) {
    const p = this.local(e);
    const scale = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.height : 1;
    const dx = e.deltaX * scale;
    const dy = e.deltaY * scale;
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      const anchor = p.x >= this.labelW ? this.timeAt(p.x) : undefined;
      this.zoomAt(Math.exp(-dy * 0.002), anchor);
      return;
    }
    if (Math.abs(dx) > Math.abs(dy)) {
      e.preventDefault();
      this.panBy((dx / this.timelineWidth) * (this.view.end - this.view.start));
      return;
    }
    const before = this.scrollY;
    this.scrollY += dy;
    this.clampScroll();
    if (this.scrollY !== before) {
      e.preventDefault(); // at either end the page scrolls on
      this.requestDraw();
      this.hoverAt(p);
    }
  },

  // Every key event inside the widget comes here (lib/keys.js); text fields keep their keys.
  ownKey(e, target) {
    if (isTextField(target)) {
      if (target === this.searchInput && e.type === "keydown") this.searchKey(e);
    } else if (target === this.resizer && e.type === "keydown" && e.key.startsWith("Arrow")) this.resizeKey(e);
    else if (e.type === "keydown") this.keyDown(e);
    else if (e.type === "keyup") this.keyUp(e);
  },

  keyDown(e) {
    if (e.altKey) return;
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if ((e.ctrlKey || e.metaKey) && key !== "Escape") return;
    let handled = true;
    if (HOLD_KEYS.has(key)) {
      if (!e.repeat && !this.held.has(key)) {
        this.held.set(key, performance.now());
        this.holdStep(key, 1);
        this.holdLoop();
      }
    } else if (e.key in TOOL_KEYS) this.setTool(TOOL_KEYS[e.key]);
    else if (key === "m") this.markSelection();
    else if (key === "p") this.togglePin(this.trackUnderMouse());
    else if (key === "h") this.hideTrack(this.trackUnderMouse());
    else if (e.key === "b") this.bookmarkAtMouse();
    else if (e.key === "B") this.bookmarkSpan();
    else if (key === "[" || key === "]") this.stepBookmarks(key === "]" ? 1 : -1);
    else if (key === "f") this.zoomToSelection();
    else if (key === "0") this.setView(this.traceStart, this.traceEnd);
    else if (key === "/") this.searchInput.focus();
    else if (e.key === "?") this.toggleHelp();
    else if (key === "Escape") {
      if (!this.help.hidden) this.toggleHelp(false);
      else this.leaveKeys();
    } else handled = false;
    if (handled) e.preventDefault();
  },

  // Escape gives the keys back: the mark goes, and focus moves to the nearest focusable container
  // outside the widget (a notebook's cell, whose command mode then has them) or nowhere.
  leaveKeys() {
    this.mark = null;
    this.requestDraw();
    const container = this.el.parentElement?.closest("[tabindex]");
    if (container) container.focus({ preventScroll: true });
    else this.el.getRootNode().activeElement?.blur();
  },

  // A control of the widget that a re-render removed or hid (the details after a flow link, a
  // regrouped pivot, the help closed) leaves focus on the page's body: the timeline takes it back.
  keepFocus(lost) {
    const active = document.activeElement;
    if (active && active !== document.body) return;
    const gone = !lost.isConnected || lost.checkVisibility?.() === false;
    if (gone && this.el.isConnected) this.stage.focus({ preventScroll: true });
  },

  keyUp(e) {
    this.held.delete(e.key.toLowerCase());
  },

  // `amount` taps of a navigation key: 1 for a press, fractions for each frame it stays down.
  holdStep(key, amount) {
    const span = this.view.end - this.view.start;
    if (key === "w") this.zoomAt(1.25 ** amount, this.mouseTime());
    else if (key === "s") this.zoomAt(0.8 ** amount, this.mouseTime());
    else if (key === "a") this.panBy(-0.1 * amount * span);
    else if (key === "d") this.panBy(0.1 * amount * span);
  },

  holdLoop() {
    if (this.holdRaf) return;
    let last = performance.now();
    const tick = (now) => {
      this.holdRaf = 0;
      if (!this.held.size) return;
      const dt = Math.min(now - last, 50);
      last = now;
      for (const [key, since] of this.held) {
        if (now - since > HOLD_AFTER_MS) this.holdStep(key, (dt / 1000) * TAPS_PER_SECOND[key]);
      }
      this.holdRaf = requestAnimationFrame(tick);
    };
    this.holdRaf = requestAnimationFrame(tick);
  },

  // ---- hit testing and hover --------------------------------------------------------------
  // What is at stage point p: {row, slice index | -1, counter bucket | -1}.
  hitTest(p) {
    if (p.x < this.labelW || p.y < AXIS_H) return null;
    const row = this.rowAtY(p.y);
    if (!row) return null;
    const tile = this.tile;
    const hit = { row, slice: -1, bucket: -1, tile };
    if (!tile || row.type !== "track") return hit;
    const t = this.timeAt(p.x) - tile.start;
    const usPerPx = (this.view.end - this.view.start) / this.timelineWidth;
    if (row.counter) {
      const range = tile.counters.get(row.trackId);
      if (!range) return hit;
      let best = -1;
      for (let i = range[0]; i < range[1] && tile.cT[i] <= t; i++) best = i;
      hit.bucket = best;
      return hit;
    }
    const depth = depthAt(row, contentY(this.layout, p.y - AXIS_H, this.scrollY));
    const range = tile.slices.get(row.trackId);
    if (depth < 0 || !range) return hit;
    let best = -1;
    let bestGap = 2 * usPerPx;
    for (let i = range[0]; i < range[1]; i++) {
      if (tile.sDepth[i] !== depth) continue;
      const s = tile.sStart[i];
      const e = s + Math.max(tile.sDur[i], usPerPx);
      const gap = t < s ? s - t : t > e ? t - e : 0;
      if (gap < bestGap || (gap === 0 && best >= 0 && tile.sDur[i] < tile.sDur[best])) {
        best = i;
        bestGap = gap;
      }
    }
    hit.slice = best;
    return hit;
  },

  // The view moved under a still mouse: what it points at changed.
  refreshHover() {
    if (this.drag) return;
    if (this.mouse) this.hoverAt(this.mouse);
    else if (this.hover) this.setHover(null);
  },

  hoverAt(p) {
    if (p.x < this.labelW && p.y >= AXIS_H) {
      const row = this.rowAtY(p.y);
      const button = row?.type === "track" ? labelButtonAt(p.x, this.labelW) : null;
      this.setHover(row ? { row, label: true, button, slice: -1, bucket: -1, p } : null);
      return;
    }
    const hit = this.hitTest(p);
    this.setHover(hit && (hit.slice >= 0 || hit.bucket >= 0 || hit.row.type === "section") ? { ...hit, track: hit.row.trackId, p } : null);
  },

  setHover(hover) {
    const before = this.hover;
    this.hover = hover;
    if (!hover) {
      this.tip.hidden = true;
      if (before) this.requestDraw();
      return;
    }
    const same = before && before.tile === hover.tile && before.row === hover.row &&
      before.slice === hover.slice && before.bucket === hover.bucket && before.label === hover.label &&
      before.button === hover.button;
    if (!same) this.fillTip(hover);
    const { x, y } = hover.p;
    const { w, h: hgt } = this.tipSize;
    // A label's tip opens right of the column, clear of the label's pin and hide buttons.
    const left = hover.label ? this.labelW + 8 : x + 14;
    this.tip.style.left = `${Math.max(4, left + w > this.width ? x - w - 10 : left)}px`;
    this.tip.style.top = `${Math.max(4, y + 16 + hgt > this.height ? y - hgt - 8 : y + 16)}px`;
    if (!same) this.requestDraw();
  },

  fillTip(hover) {
    const tile = hover.tile;
    let lines;
    if (hover.slice >= 0) {
      const i = hover.slice;
      lines = sliceTooltip({
        name: this.names.name(tile.sName[i]), start: tile.start + tile.sStart[i], dur: tile.sDur[i],
        count: tile.sCount[i], depth: tile.sDepth[i],
      });
    } else if (hover.bucket >= 0) {
      const i = hover.bucket;
      const value = (v) => (Number.isInteger(v) ? v.toLocaleString("en") : v.toPrecision(6));
      lines = [h("div", { className: "xw-tv-tip-name" }, hover.row.label), h("div", {}, `value ${value(tile.cLast[i])}`)];
      if (tile.cMin[i] !== tile.cMax[i]) lines.push(h("div", { className: "xw-tv-dim" }, `range in this pixel: ${value(tile.cMin[i])} – ${value(tile.cMax[i])}`));
      lines.push(h("div", { className: "xw-tv-dim" }, `at ${formatTime(tile.start + tile.cT[i])}`));
    } else if (hover.label && hover.row.type === "track") {
      const pinned = hover.row.pinned;
      lines = [h("div", { className: "xw-tv-tip-name" }, hover.row.label),
        h("div", { className: "xw-tv-dim" }, `${hover.row.nEvents.toLocaleString("en")} events${hover.row.counter ? " (counter)" : ""}`),
        h("div", { className: "xw-tv-dim" }, hover.button === "hide" ? "Hide this track (H); the Tracks menu shows it again"
          : hover.button === "pin" ? (pinned ? "Unpin: back to its section (P)" : "Pin: keep it at the top while the others scroll (P)")
            : `${pinned ? "P unpins" : "P pins"} · H hides`)];
    } else if (hover.row.type === "section") {
      lines = [h("div", { className: "xw-tv-tip-name" }, hover.row.label),
        h("div", { className: "xw-tv-dim" }, hover.row.kind === "pod-host" ? "This host's busy time. Click the name to show its tracks (its worker sends them)."
          : hover.row.collapsed ? `${hover.row.nTracks} tracks, collapsed: busy time shown. Click the name to expand.` : `${hover.row.nTracks} tracks. Click the name to collapse.`)];
    }
    this.tip.replaceChildren(...lines);
    this.tip.hidden = false;
    this.tipSize = { w: this.tip.offsetWidth, h: this.tip.offsetHeight };
  },
};
