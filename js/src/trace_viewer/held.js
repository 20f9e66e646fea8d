// What the view already holds: the last few window answers. A key, wheel or drag redraws on the
// next frame from them (each answer scaled and shifted to the new time range, the one nearest the
// view's resolution on top, hatching where none reaches); the kernel's answer then refines it.

/** How many answers (of the same tracks and options) the view keeps. */
export const HELD_TILES = 6;

/**
 * Where a tile's times land on a timeline `widthPx` wide showing [view.start, view.end]:
 * x = offset + t * scale, for t in µs from the tile's start and x in px from the timeline's left.
 */
export function tileTransform(tile, view, widthPx) {
  const scale = widthPx / Math.max(view.end - view.start, 1e-9);
  return { scale, offset: (tile.start - view.start) * scale };
}

/** µs per pixel the tile was answered at. */
function resolution(tile) {
  return (tile.end - tile.start) / Math.max(tile.widthPx, 1);
}

// [a, b] less every interval of `taken` (sorted, disjoint): the pieces still free.
function subtract(a, b, taken) {
  const free = [];
  let at = a;
  for (const [s, e] of taken) {
    if (e <= at) continue;
    if (s >= b) break;
    if (s > at) free.push([at, s]);
    at = Math.max(at, e);
    if (at >= b) break;
  }
  if (at < b) free.push([at, b]);
  return free;
}

function insert(taken, pieces) {
  return [...taken, ...pieces].sort((p, q) => p[0] - q[0]).reduce((out, [s, e]) => {
    const last = out[out.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
    return out;
  }, []);
}

/**
 * The layers one frame draws from `tiles` (newest first) for `view` on a timeline `widthPx` wide,
 * inside the trace [traceStart, traceEnd]. `top` (the answer for this view, when there is one)
 * lies on top; then the tile whose resolution is nearest the view's, then the newest. Each layer
 * is {tile, scale, offset, spans}: `spans` the [x0, x1] pixel ranges it alone draws. `unknown` is
 * where the trace has time in view that no tile covers.
 */
export function heldLayers(tiles, view, widthPx, traceStart, traceEnd, top = null) {
  const usPerPx = Math.max(view.end - view.start, 1e-9) / widthPx;
  const nearness = (tile) => Math.abs(Math.log(resolution(tile) / usPerPx));
  const order = tiles.filter((tile) => tile !== top).map((tile, age) => ({ tile, age, near: nearness(tile) }));
  order.sort((p, q) => p.near - q.near || p.age - q.age);
  if (top) order.unshift({ tile: top });
  const layers = [];
  let taken = [];
  for (const { tile } of order) {
    const { scale, offset } = tileTransform(tile, view, widthPx);
    const x0 = Math.max(offset, 0);
    const x1 = Math.min(offset + (tile.end - tile.start) * scale, widthPx);
    if (x1 <= x0) continue;
    const spans = subtract(x0, x1, taken);
    if (!spans.length) continue;
    layers.push({ tile, scale, offset, spans });
    taken = insert(taken, spans);
  }
  const scale = widthPx / Math.max(view.end - view.start, 1e-9);
  const t0 = Math.max((traceStart - view.start) * scale, 0);
  const t1 = Math.min((traceEnd - view.start) * scale, widthPx);
  const unknown = order.length && t1 > t0 ? subtract(t0, t1, taken) : [];
  return { layers, unknown };
}

/**
 * The tiles to keep once `tile` arrives (newest first): those asked for the same tracks and
 * options (their request's `key`), less any the new one covers at least as finely, at most
 * HELD_TILES.
 */
export function keepTiles(tiles, tile) {
  const finer = resolution(tile);
  const key = tile.params.key;
  const kept = tiles.filter((old) => old.params.key === key &&
    !(old.start >= tile.start && old.end <= tile.end && resolution(old) >= finer));
  return [tile, ...kept].slice(0, HELD_TILES);
}
