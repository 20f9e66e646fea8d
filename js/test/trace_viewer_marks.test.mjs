// Pinned and hidden tracks and bookmarks in the trace viewer: the layout's pinned area, what is
// under a point when the tracks scroll, bookmark naming and stepping, and what the view tells
// the kernel.
import assert from "node:assert/strict";
import { test } from "node:test";
import { inputMethods } from "../src/trace_viewer/input.js";
import { navigationMethods } from "../src/trace_viewer/navigate.js";
import {
  DEPTH_H, SECTION_H, TRACK_PAD, buildLayout, labelButtonAt, rowAtScreen, screenTop, tablesOf,
} from "../src/trace_viewer/layout.js";
import { bookmarkView, freeName, markMethods, stepBookmark } from "../src/trace_viewer/marks.js";
import { boxRows } from "../src/trace_viewer/selection.js";

// Two GPUs of two streams each, and a host of one thread.
const SUMMARY = {
  sections: { id: [0, 1, 2], name: ["/device:GPU:0", "/device:GPU:1", "/host:CPU"], kind: ["device", "device", "host"], host: ["h", "h", "h"] },
  tracks: {
    id: [0, 1, 2, 3, 4], section_id: [0, 0, 1, 1, 2],
    name: ["Stream #12(Compute)", "Stream #15(Nccl)", "Stream #12(Compute)", "Stream #15(Nccl)", "python"],
    kind: Array(5).fill("slices"), max_depth: [0, 0, 0, 0, 2], n_events: Array(5).fill(10),
  },
};
const ROW = DEPTH_H + 2 * TRACK_PAD;

test("pinned tracks come first, in pin order, labelled with their section; hidden ones go", () => {
  const tables = tablesOf(SUMMARY);
  const layout = buildLayout(tables, new Set(), "", false, { pinned: [3, 0, 99], hidden: new Set([1, 0]) });
  // 0 is pinned and hidden: hidden wins (the kernel never sends both); 99 is not in the summary
  assert.deepEqual(layout.rows.map((r) => [r.type, r.label, Boolean(r.pinned)]), [
    ["track", "/device:GPU:1 · Stream #15(Nccl)", true],
    ["section", "/device:GPU:1", false],
    ["track", "Stream #12(Compute)", false],
    ["section", "/host:CPU", false],
    ["track", "python", false],
  ]); // GPU 0 lost both its tracks: its header goes too
  assert.equal(layout.pinnedH, ROW);
  assert.equal(layout.rows[1].y, ROW);
  assert.equal(layout.height, ROW + 2 * SECTION_H + ROW + 3 * DEPTH_H + 2 * TRACK_PAD);
  assert.equal(layout.trackRow.get(3).pinned, true);
  // A filter and a collapsed section leave pinned tracks where they are.
  const filtered = buildLayout(tables, new Set([1]), "python", false, { pinned: [3], hidden: new Set() });
  assert.deepEqual(filtered.rows.map((r) => r.label), ["/device:GPU:1 · Stream #15(Nccl)", "/host:CPU", "python"]);
});

test("pinned rows stay under the axis while the others scroll beneath them", () => {
  const layout = buildLayout(tablesOf(SUMMARY), new Set(), "", false, { pinned: [4], hidden: new Set() });
  const pinnedH = 3 * DEPTH_H + 2 * TRACK_PAD;
  assert.equal(layout.pinnedH, pinnedH);
  for (const scrollY of [0, 40, 100]) {
    assert.equal(rowAtScreen(layout, 5, scrollY).trackId, 4);
    assert.equal(screenTop(layout.rows[0], scrollY), 0);
  }
  // Just under the pinned area: the first scrolled row at 0, a later one once scrolled.
  assert.equal(rowAtScreen(layout, pinnedH + 1, 0).label, "/device:GPU:0");
  const at = rowAtScreen(layout, pinnedH + 1, SECTION_H + ROW);
  assert.equal(at.trackId, 1);
  assert.equal(screenTop(at, SECTION_H + ROW), pinnedH);
  assert.equal(rowAtScreen(layout, -1, 0), null);
});

test("a box takes the pinned rows where they stay and the scrolled ones only where seen", () => {
  const tables = tablesOf(SUMMARY);
  const layout = buildLayout(tables, new Set(), "", false, { pinned: [4], hidden: new Set() });
  const pinnedH = layout.pinnedH; // python: 3 depths
  // Over the pinned python thread's middle depth only.
  assert.deepEqual(boxRows(layout, tables.tracks, TRACK_PAD + DEPTH_H + 2, TRACK_PAD + DEPTH_H + 10, 500), [[4, 1, 1]]);
  // Scrolled by GPU 0's header and first stream: from the pinned area's top to 10 px under it
  // crosses the python thread and GPU 0's second stream (the first is under the pinned area).
  assert.deepEqual(boxRows(layout, tables.tracks, 0, pinnedH + 10, SECTION_H + ROW), [[4, 0, 2], [1, 0, 0]]);
  // Collapsed, GPU 1 stands for its streams.
  const collapsed = buildLayout(tables, new Set([1]), "", false, { pinned: [], hidden: new Set() });
  assert.deepEqual(boxRows(collapsed, tables.tracks, SECTION_H + 2 * ROW + 1, SECTION_H + 2 * ROW + 5, 0), [[2, 0, 0], [3, 0, 0]]);
});

test("a track label's buttons: pin, then hide at the right end", () => {
  assert.equal(labelButtonAt(205, 210), "hide");
  assert.equal(labelButtonAt(192, 210), "hide");
  assert.equal(labelButtonAt(180, 210), "pin");
  assert.equal(labelButtonAt(100, 210), null);
});

test("bookmarks: free names, stepping by the view's middle with wrap, the view each asks for", () => {
  assert.equal(freeName([]), "bookmark 1");
  assert.equal(freeName(["bookmark 1", "bookmark 3"]), "bookmark 2");
  const marks = [
    { name: "late", start_us: 900, end_us: 900 },
    { name: "b", start_us: 100, end_us: 300 },
    { name: "a", start_us: 50, end_us: 50 },
  ];
  assert.equal(stepBookmark(marks, 50, 1).name, "b"); // at "a": the next one
  assert.equal(stepBookmark(marks, 200, 1).name, "late");
  assert.equal(stepBookmark(marks, 950, 1).name, "a"); // wraps
  assert.equal(stepBookmark(marks, 200, -1).name, "a");
  assert.equal(stepBookmark(marks, 10, -1).name, "late");
  assert.equal(stepBookmark([], 10, 1), null);
  assert.deepEqual(bookmarkView(marks[2], { start: 0, end: 40 }), { start: 30, end: 70 });
  const span = bookmarkView(marks[1], { start: 0, end: 40 });
  assert.ok(Math.abs(span.start - 90) < 1e-9 && Math.abs(span.end - 310) < 1e-9);
});

function fakeView(values = {}) {
  const saved = [];
  const view = Object.assign(Object.create({ ...markMethods, ...inputMethods, ...navigationMethods }), {
    model: {
      values: { pinned_tracks: [], hidden_tracks: [], _bookmarks: [], ...values },
      get(key) { return this.values[key]; },
      set(key, value) { this.values[key] = value; },
      save_changes() { saved.push(structuredClone(this.values)); },
    },
    el: { dataset: {} },
    view: { start: 0, end: 1000 },
    held: new Map(),
    help: { hidden: true },
    labelW: 200,
    timelineWidth: 800,
    scrollY: 0,
    mouse: null,
    height: 30 + 100,
    filter: "",
    collapsed: new Set(),
    trackSection: new Map(SUMMARY.tracks.id.map((id, i) => [id, SUMMARY.tracks.section_id[i]])),
    clampScroll() { this.scrollY = Math.max(0, Math.min(this.scrollY, this.layout.height - 100)); },
    relayout() { this.layout = buildLayout(tablesOf(SUMMARY), new Set(), "", false, this.marks); },
    ensureData() {}, fillMarkMenus() {}, requestDraw() {}, setHover() {},
    setView(start, end) { this.view = { start, end }; },
    selectionSpan() { return [400, 450]; },
    mouseTime() { return this.view.start + ((this.mouse.x - this.labelW) / this.timelineWidth) * (this.view.end - this.view.start); },
  });
  view.readMarks();
  view.relayout();
  return { view, saved };
}

const key = (k, extra = {}) => ({ key: k, repeat: false, preventDefault() { this.prevented = true; }, ...extra });

test("keys: P pins and H hides the track under the mouse; the kernel is told", () => {
  const { view, saved } = fakeView({ hidden_tracks: [2] });
  view.mouse = { x: 500, y: 30 + SECTION_H + 5 }; // GPU 0's first stream
  const p = key("p");
  view.keyDown(p);
  assert.ok(p.prevented);
  assert.deepEqual(saved.at(-1).pinned_tracks, [0]);
  view.mouse = { x: 50, y: 30 + 2 }; // now the pinned row is at the top
  view.keyDown(key("p"));
  assert.deepEqual(saved.at(-1).pinned_tracks, []);
  view.mouse = { x: 500, y: 30 + SECTION_H + ROW + 5 }; // GPU 0's second stream
  view.keyDown(key("h"));
  assert.deepEqual(saved.at(-1).hidden_tracks, [2, 1]);
  view.showTrack();
  assert.deepEqual(saved.at(-1).hidden_tracks, []);
});

test("keys: B at the mouse, Shift+B over the selection, ] and [ go between them", () => {
  const { view, saved } = fakeView({ _bookmarks: [{ name: "bookmark 1", start_us: 700, end_us: 700 }] });
  view.mouse = { x: 200 + 80, y: 100 }; // 10% into the timeline: 100 µs
  view.keyDown(key("b"));
  view.keyDown(key("B", { shiftKey: true }));
  assert.deepEqual(saved.at(-1)._bookmarks, [
    { name: "bookmark 2", start_us: 100, end_us: 100 },
    { name: "bookmark 3", start_us: 400, end_us: 450 },
    { name: "bookmark 1", start_us: 700, end_us: 700 },
  ]);
  view.view = { start: 0, end: 100 }; // the middle at 50
  view.keyDown(key("]"));
  assert.deepEqual(view.view, { start: 50, end: 150 });
  view.keyDown(key("]"));
  assert.equal(view.el.dataset.bookmark, "bookmark 3");
  view.keyDown(key("["));
  assert.equal(view.el.dataset.bookmark, "bookmark 2");
  view.removeBookmark("bookmark 2");
  assert.deepEqual(saved.at(-1)._bookmarks.map((b) => b.name), ["bookmark 3", "bookmark 1"]);
});

test("going to an event on a hidden track shows it; a pinned track needs no scrolling", () => {
  const { view, saved } = fakeView({ hidden_tracks: [4], pinned_tracks: [3] });
  view.revealTrack(4);
  assert.deepEqual(saved.at(-1).hidden_tracks, []);
  assert.ok(view.layout.trackRow.has(4));
  assert.ok(view.scrollY > 0); // the python thread is far down: scrolled to it
  view.scrollY = 0;
  view.revealTrack(3);
  assert.equal(view.scrollY, 0);
});
