// Pinned and hidden tracks and bookmarks. The widget's traits hold them (pinned_tracks,
// hidden_tracks, _bookmarks); the kernel keeps them per profile (trace/marks.py). A key or a
// button changes the picture at once and then tells the kernel. Methods of TraceView (view.js).
import { h } from "../lib/dom.js";
import { AXIS_H } from "./layout.js";
import { formatDuration, formatTime } from "./timescale.js";

/** `bookmark N` with the smallest N >= 1 not taken (trace/marks.py names them so too). */
export function freeName(names) {
  const taken = new Set(names);
  let n = 1;
  while (taken.has(`bookmark ${n}`)) n += 1;
  return `bookmark ${n}`;
}

/** Bookmarks by time, then end, then name (as the kernel sorts them). */
export function sortBookmarks(bookmarks) {
  return [...bookmarks].sort((a, b) => a.start_us - b.start_us || a.end_us - b.end_us || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The bookmark after (direction 1) or before (-1) time `t`, `tol` µs counting as at `t`;
 * past the last one it wraps to the first (and before the first to the last). */
export function stepBookmark(bookmarks, t, direction, tol = 0) {
  if (!bookmarks.length) return null;
  const sorted = sortBookmarks(bookmarks);
  const centre = (b) => (b.start_us + b.end_us) / 2;
  if (direction > 0) return sorted.find((b) => centre(b) > t + tol) ?? sorted[0];
  return [...sorted].reverse().find((b) => centre(b) < t - tol) ?? sorted[sorted.length - 1];
}

/** The view a bookmark asks for: a span fills it (5% each side), a time is centred in `view`. */
export function bookmarkView(b, view) {
  if (b.end_us > b.start_us) {
    const pad = Math.max((b.end_us - b.start_us) * 0.05, 0.001);
    return { start: b.start_us - pad, end: b.end_us + pad };
  }
  const half = (view.end - view.start) / 2;
  return { start: b.start_us - half, end: b.start_us + half };
}

export const markMethods = {
  /** Reads the pins, hides and bookmarks from the model. */
  readMarks() {
    this.marks = {
      pinned: [...(this.model.get("pinned_tracks") ?? [])],
      hidden: new Set(this.model.get("hidden_tracks") ?? []),
    };
    this.bookmarks = sortBookmarks(this.model.get("_bookmarks") ?? []);
  },

  marksFromModel() {
    this.readMarks();
    this.marksChanged();
  },

  marksChanged() {
    this.relayout();
    this.ensureData();
    this.fillMarkMenus();
    this.requestDraw();
  },

  saveMarks() {
    this.model.set("pinned_tracks", [...this.marks.pinned]);
    this.model.set("hidden_tracks", [...this.marks.hidden]);
    this.model.set("_bookmarks", this.bookmarks.map((b) => ({ ...b })));
    this.model.save_changes();
    this.marksChanged();
  },

  /** Pins a track (after those pinned before), or puts a pinned one back in its section. */
  togglePin(trackId) {
    if (trackId === undefined || trackId === null) return;
    const { pinned, hidden } = this.marks;
    if (pinned.includes(trackId)) this.marks.pinned = pinned.filter((t) => t !== trackId);
    else {
      pinned.push(trackId);
      hidden.delete(trackId);
    }
    this.saveMarks();
  },

  hideTrack(trackId) {
    if (trackId === undefined || trackId === null) return;
    this.marks.hidden.add(trackId);
    this.marks.pinned = this.marks.pinned.filter((t) => t !== trackId);
    if (this.hover?.row?.trackId === trackId) this.setHover(null);
    this.saveMarks();
  },

  /** Shows hidden tracks again: one, or every one when `trackId` is undefined. */
  showTrack(trackId) {
    if (trackId === undefined) this.marks.hidden.clear();
    else this.marks.hidden.delete(trackId);
    this.saveMarks();
  },

  /** The track row under the mouse (label or timeline), if any. */
  trackUnderMouse() {
    const p = this.mouse;
    if (!p || p.y < AXIS_H) return undefined;
    const row = this.rowAtY(p.y);
    return row?.type === "track" ? row.trackId : undefined;
  },

  addBookmark(start, end = start) {
    const name = freeName(this.bookmarks.map((b) => b.name));
    this.bookmarks = sortBookmarks([...this.bookmarks, { name, start_us: start, end_us: end }]);
    this.saveMarks();
    return name;
  },

  /** B: a bookmark at the mouse's time (the view's middle when the mouse is not on it). */
  bookmarkAtMouse() {
    const t = this.mouseTime() ?? (this.view.start + this.view.end) / 2;
    this.addBookmark(t);
  },

  /** Shift+B: a bookmark over the timing mark, else over the selection's span. */
  bookmarkSpan() {
    const span = this.mark ? [this.mark.start, this.mark.end] : this.selectionSpan();
    if (span) this.addBookmark(span[0], span[1]);
  },

  removeBookmark(name) {
    this.bookmarks = this.bookmarks.filter((b) => b.name !== name);
    this.saveMarks();
  },

  goBookmark(b) {
    const { start, end } = bookmarkView(b, this.view);
    this.setView(start, end);
    this.el.dataset.bookmark = b.name;
  },

  /** [ and ]: the bookmark before or after the middle of the view. */
  stepBookmarks(direction) {
    const mid = (this.view.start + this.view.end) / 2;
    const tol = (this.view.end - this.view.start) * 1e-6;
    const b = stepBookmark(this.bookmarks, mid, direction, tol);
    if (b) this.goBookmark(b);
  },

  // ---- the toolbar's menus ----------------------------------------------------------------
  buildMarkMenus() {
    this.trackMenuLabel = h("summary", { title: "Pinned tracks stay at the top while the others scroll; hidden ones are not drawn. P pins and H hides the track under the mouse (or the buttons at the right of its label)." });
    this.trackMenuList = h("div", { className: "xw-tv-host-list xw-tv-mark-list" });
    this.trackMenu = h("details", { className: "xw-tv-hosts xw-tv-tracks-menu" }, this.trackMenuLabel, this.trackMenuList);
    this.bookmarkLabel = h("summary", { title: "Named times and spans: B adds one at the mouse, Shift+B over the timing mark or selection, [ and ] go to the previous and next" });
    this.bookmarkList = h("div", { className: "xw-tv-host-list xw-tv-mark-list" });
    this.bookmarkMenu = h("details", { className: "xw-tv-hosts xw-tv-bookmarks-menu" }, this.bookmarkLabel, this.bookmarkList);
    this.fillMarkMenus();
    return [this.trackMenu, this.bookmarkMenu];
  },

  fillMarkMenus() {
    const { pinned, hidden } = this.marks;
    const name = (id) => {
      const section = this.sectionById.get(this.trackSection.get(id));
      const track = this.trackNames.get(id);
      return track === undefined ? `track ${id} (its host is not shown)` : `${section?.name ?? ""} · ${track}`;
    };
    this.trackMenuLabel.textContent = `Tracks (${pinned.length} pinned · ${hidden.size} hidden)`;
    const item = (text, action, title, onClick, data) => h("div", { className: "xw-tv-mark-item" },
      h("button", { type: "button", className: "xw-tv-link", title, onclick: onClick, dataset: data }, action), ` ${text}`);
    const rows = [];
    if (pinned.length) rows.push(h("div", { className: "xw-tv-subtitle" }, "Pinned"));
    for (const id of pinned) rows.push(item(name(id), "unpin", "Put it back in its section", () => this.togglePin(id), { unpin: String(id) }));
    if (hidden.size) rows.push(h("div", { className: "xw-tv-subtitle" }, "Hidden"));
    for (const id of hidden) rows.push(item(name(id), "show", "Draw it again", () => this.showTrack(id), { show: String(id) }));
    if (hidden.size > 1) rows.push(h("button", { type: "button", className: "xw-tv-link", onclick: () => this.showTrack() }, "show all"));
    if (!rows.length) rows.push(h("div", { className: "xw-tv-dim" }, "None pinned or hidden. P pins, H hides the track under the mouse."));
    this.trackMenuList.replaceChildren(...rows);

    this.bookmarkLabel.textContent = `Bookmarks (${this.bookmarks.length})`;
    const marks = this.bookmarks.map((b) => h("div", { className: "xw-tv-mark-item" },
      h("button", { type: "button", className: "xw-tv-link", title: "Go there", onclick: () => this.goBookmark(b), dataset: { go: b.name } }, b.name),
      ` ${formatTime(b.start_us, 0.001)}${b.end_us > b.start_us ? ` + ${formatDuration(b.end_us - b.start_us)}` : ""} `,
      h("button", { type: "button", className: "xw-tv-close", title: "Remove", onclick: () => this.removeBookmark(b.name) }, "×")));
    if (!marks.length) marks.push(h("div", { className: "xw-tv-dim" }, "None yet. B adds one at the mouse, Shift+B over the timing mark or selection."));
    this.bookmarkList.replaceChildren(...marks);
  },
};
