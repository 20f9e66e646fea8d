// Flow overlays (overlay.js): decoding an answer's overlay buffers, the arrows drawn for the
// overlays shown, and picking one by a click near its curve.
import assert from "node:assert/strict";
import { test } from "node:test";
import { bendOf, decodeOverlays, isChosen, overlayArrows, overlayColor, pickArrow } from "../src/trace_viewer/overlay.js";

// Two edges of overlay "collectives" (labels 0 and 1) and one of "path": (from, to) times in us
// after the answer's start, places as flow_where, (overlay, label) tags.
const content = { n_overlay_flows: 3, overlays: ["collectives", "path"], overlay_labels: ["all_reduce #0", "all_reduce #1"] };
const bytes = (values) => new Uint8Array(values.buffer); // as the kernel's buffers arrive
const buffers = Array.from({ length: 14 }, () => new Uint8Array(0));
buffers.push(
  bytes(new Float32Array([10, 50, 20, 80, 30, 40])),
  bytes(new Uint32Array([1, 0, 100, 2, 0, 200, 1, 0, 101, 3, 0, 300, 2, 0, 200, 3, 0, 300])),
  bytes(new Uint32Array([0, 0, 0, 1, 1, 0])),
);
const tl = { x0: 100, x1: 1100, y0: 20, y1: 500 };
const rows = new Map([[1, 40], [2, 80], [3, 120]]);
const place = (track) => rows.get(track) ?? null;

test("an answer's overlay buffers decode; an answer without them has none", () => {
  const o = decodeOverlays(content, buffers);
  assert.equal(o.n, 3);
  assert.deepEqual(Array.from(o.tag), [0, 0, 0, 1, 1, 0]);
  assert.equal(decodeOverlays({ n_flows: 0 }, buffers.slice(0, 14)), null);
});

test("only the shown overlays' arrows are drawn, each in its colour, carrying its ends", () => {
  const o = decodeOverlays(content, buffers);
  const colors = new Map([["collectives", overlayColor(0, false)]]);
  const arrows = overlayArrows(o, { place, ox: 100, pxPerUs: 10, tl, colors, start: 1000 });
  assert.equal(arrows.length, 2);
  assert.deepEqual(arrows.map((a) => [a.from, a.to, a.label]), [[100, 200, "all_reduce #0"], [101, 300, "all_reduce #1"]]);
  assert.deepEqual([arrows[0].x0, arrows[0].y0, arrows[0].x1, arrows[0].y1], [200, 40, 600, 80]);
  assert.equal(arrows[0].fromUs, 1010);
  assert.equal(arrows[0].color, "#1565c0");
  const both = new Map([...colors, ["path", overlayColor(1, false)]]);
  assert.equal(overlayArrows(o, { place, ox: 100, pxPerUs: 10, tl, colors: both }).length, 3);
  // an end on a row not laid out, or both ends left of the timeline: not drawn
  assert.equal(overlayArrows(o, { place: () => null, ox: 100, pxPerUs: 10, tl, colors: both }).length, 0);
  assert.equal(overlayArrows(o, { place, ox: -2000, pxPerUs: 10, tl, colors: both }).length, 0);
});

test("a click on an arrow's curve picks it; one beside it picks nothing", () => {
  const o = decodeOverlays(content, buffers);
  const arrows = overlayArrows(o, { place, ox: 100, pxPerUs: 10, tl, colors: new Map([["collectives", "red"], ["path", "blue"]]) });
  assert.equal(pickArrow(arrows, 200, 40).from, 100); // its start
  const mid = arrows[2]; // (400, 80) -> (500, 120): the middle of the curve is its midpoint
  assert.equal(pickArrow(arrows, (mid.x0 + mid.x1) / 2, (mid.y0 + mid.y1) / 2 + 2).overlay, "path");
  assert.equal(pickArrow(arrows, 900, 400), null);
  assert.equal(bendOf(0, 400), 80);
});

test("a picked arrow alone is drawn strong, not every arrow sharing one of its ends", () => {
  const star = [{ from: 1, to: 9 }, { from: 2, to: 9 }];
  assert.deepEqual(star.map((a) => isChosen(a, new Set([1, 9]))), [true, false]);
  assert.deepEqual(star.map((a) => isChosen(a, new Set([9]))), [true, true]);
  assert.deepEqual(star.map((a) => isChosen(a, new Set([2, 5]))), [false, false]);
});
