// The held picture: where earlier answers land after the view moves, which one lies on top,
// what is left unknown, and which answers are kept.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HELD_TILES, heldLayers, keepTiles, tileTransform } from "../src/trace_viewer/held.js";

// A tile over [start, end] µs answered at `widthPx` pixels, asked for tracks `key`.
const tile = (start, end, widthPx, key = "k") => ({ start, end, widthPx, params: { key } });

test("a tile's times land scaled and shifted to the view's range", () => {
  const t = tile(100, 400, 300);
  // The same range: 1 px per µs, no shift.
  assert.deepEqual(tileTransform(t, { start: 100, end: 400 }, 300), { scale: 1, offset: 0 });
  // Panned right by a tenth of the view: the picture moves left by 30 px.
  assert.deepEqual(tileTransform(t, { start: 130, end: 430 }, 300), { scale: 1, offset: -30 });
  // Zoomed in 1.25x around the centre (250 µs): 1.25 px per µs, the start 37.5 px off the left.
  const zoomed = tileTransform(t, { start: 250 - 120, end: 250 + 120 }, 300);
  assert.equal(zoomed.scale, 1.25);
  assert.equal(zoomed.offset, -37.5);
  // Every time maps where the view's own axis puts it.
  const view = { start: 170, end: 290 };
  const { scale, offset } = tileTransform(t, view, 600);
  for (const us of [100, 170, 233.3, 290, 400]) {
    assert.ok(Math.abs(offset + (us - t.start) * scale - ((us - view.start) / (view.end - view.start)) * 600) < 1e-9);
  }
});

test("the newest answer lies on top once it serves the view; older ones fill around it", () => {
  const wide = tile(0, 3000, 300); // 10 µs per px
  const narrow = tile(900, 1500, 600); // 1 µs per px
  const view = { start: 800, end: 1600 };
  const { layers, unknown } = heldLayers([narrow, wide], view, 800, 0, 3000, narrow);
  assert.equal(layers.length, 2);
  assert.equal(layers[0].tile, narrow);
  assert.deepEqual(layers[0].spans, [[100, 700]]);
  assert.equal(layers[1].tile, wide);
  assert.deepEqual(layers[1].spans, [[0, 100], [700, 800]]);
  assert.deepEqual(unknown, []);
});

test("before the answer comes, the held answer nearest the view's resolution lies on top", () => {
  const coarse = tile(0, 3000, 300); // 10 µs per px, the newest
  const fine = tile(900, 1500, 600); // 1 µs per px
  const view = { start: 1000, end: 1400 }; // 0.5 µs per px on 800 px
  const { layers } = heldLayers([coarse, fine], view, 800, 0, 3000);
  assert.equal(layers[0].tile, fine);
  assert.deepEqual(layers[0].spans, [[0, 800]]);
  assert.equal(layers.length, 1); // the coarse one is hidden everywhere
  // With the coarse one the view's own answer, it lies on top and the fine one shows nowhere.
  assert.deepEqual(heldLayers([coarse, fine], view, 800, 0, 3000, coarse).layers.map((l) => l.tile), [coarse]);
  // The view's own answer lies on top even when no longer among the kept ones.
  assert.deepEqual(heldLayers([fine], view, 800, 0, 3000, coarse).layers.map((l) => l.tile), [coarse]);
});

test("time of the trace that no answer covers is unknown; time outside the trace is not", () => {
  const held = tile(1000, 2000, 500);
  // Zoomed out to [0, 4000] on 400 px: the trace is [500, 3000].
  const { layers, unknown } = heldLayers([held], { start: 0, end: 4000 }, 400, 500, 3000);
  assert.deepEqual(layers[0].spans, [[100, 200]]);
  assert.deepEqual(unknown, [[50, 100], [200, 300]]);
  // Panned off the held range entirely: no layer, all of the trace in view unknown.
  const away = heldLayers([held], { start: 2500, end: 3500 }, 100, 500, 3000);
  assert.deepEqual(away.layers, []);
  assert.deepEqual(away.unknown, [[0, 50]]);
  // Nothing held yet (the first answer): nothing is hatched.
  assert.deepEqual(heldLayers([], { start: 0, end: 10 }, 100, 0, 10).unknown, []);
});

test("kept answers: the newest first, same tracks only, none it covers as finely, at most HELD_TILES", () => {
  const a = tile(0, 1000, 100); // 10 µs per px
  const b = tile(2000, 3000, 1000); // 1 µs per px
  const other = tile(0, 5000, 100, "other tracks");
  const wider = tile(0, 1500, 300); // 5 µs per px: covers a, finer than a
  assert.deepEqual(keepTiles([b, other, a], wider), [wider, b]);
  const coarser = tile(0, 4000, 100); // covers b too, but more coarsely: b stays
  assert.deepEqual(keepTiles([wider, b], coarser), [coarser, wider, b]);
  let tiles = [];
  for (let k = 0; k < HELD_TILES + 3; k++) tiles = keepTiles(tiles, tile(k * 10, k * 10 + 5, 5));
  assert.equal(tiles.length, HELD_TILES);
  assert.equal(tiles[0].start, (HELD_TILES + 2) * 10);
});
