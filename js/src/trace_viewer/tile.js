// One `window` answer (docs/dev/trace_protocol.md) as flat typed arrays the renderer walks, plus
// the rule that decides when the view needs a new one.
import { typed } from "../lib/transport.js";
import { paletteIndex } from "./colors.js";
import { decodeOverlays } from "./overlay.js";

/** How far beyond the viewport a request reaches: the answer covers 3 viewports. */
export const FETCH_SPAN = 3;
/** The view may wander within this many viewports (centred on the answer) before a refetch. */
export const KEEP_SPAN = 2;
/** Zooming in by more than this over the answer's resolution asks for a finer one. */
export const MAX_ZOOM_IN = 4;

/** Names sent so far (name id -> text) and their palette entries. */
export class NameTable {
  constructor() {
    this.text = new Map();
    this.color = new Map();
  }
  add(strings) {
    for (const [id, text] of strings) {
      this.text.set(id, String(text));
      this.color.set(id, paletteIndex(String(text)));
    }
  }
  name(id) {
    return this.text.get(id);
  }
}

function ranges(counts) {
  const out = new Map();
  let offset = 0;
  for (const [id, n] of counts) {
    out.set(id, [offset, offset + n]);
    offset += n;
  }
  return out;
}

/**
 * The answer to `request` ({start_us, end_us, width_px, ...} plus `viewSpan`, `viewStart`,
 * `viewEnd`: the view it was asked for) as a tile. `names` learns the answer's strings; the
 * tile's `missingNames` says whether some name ids are still unknown.
 */
export function decodeTile(content, buffers, request, names) {
  names.add(content.strings ?? []);
  const b = buffers;
  const tile = {
    start: content.start_us,
    end: content.end_us,
    widthPx: content.width_px,
    viewSpan: request.viewSpan,
    okStart: request.okStart,
    okEnd: request.okEnd,
    params: request,
    sStart: typed(b[0], Float32Array),
    sDur: typed(b[1], Float32Array),
    sName: typed(b[2], Int32Array),
    sCount: typed(b[3], Uint32Array),
    sEvent: typed(b[4], Uint32Array),
    sDepth: typed(b[5], Uint16Array),
    cT: typed(b[6], Float32Array),
    cMin: typed(b[7], Float64Array),
    cMax: typed(b[8], Float64Array),
    cLast: typed(b[9], Float64Array),
    flowT: typed(b[10], Float32Array),
    flowWhere: typed(b[11], Uint32Array),
    sumStart: typed(b[12], Float32Array),
    sumDur: typed(b[13], Float32Array),
    nFlows: content.n_flows ?? 0,
    overlay: decodeOverlays(content, b),
    eventsInWindow: content.events_in_window ?? 0,
    queryMs: content.query_ms ?? 0,
  };
  const tracks = content.tracks ?? [];
  tile.slices = ranges(tracks.map(([id, n]) => [id, n]));
  tile.counters = ranges(tracks.map(([id, , n]) => [id, n]));
  tile.summaries = ranges((content.summaries ?? []).map(([id, n]) => [id, n]));
  tile.counterRange = new Map();
  for (const [id, [lo, hi]] of tile.counters) {
    let min = 0;
    let max = 0;
    for (let i = lo; i < hi; i++) {
      if (tile.cMin[i] < min) min = tile.cMin[i];
      if (tile.cMax[i] > max) max = tile.cMax[i];
    }
    tile.counterRange.set(id, [min, max > min ? max : min + 1]);
  }
  const n = tile.sName.length;
  const color = new Uint8Array(n);
  let missing = false;
  for (let i = 0; i < n; i++) {
    const c = names.color.get(tile.sName[i]);
    if (c === undefined) missing = true;
    else color[i] = c;
  }
  tile.color = color;
  tile.missingNames = missing;
  return tile;
}

/**
 * The window to ask for when the view is [start, end] over `widthPx` pixels, inside the trace's
 * [traceStart, traceEnd]: FETCH_SPAN viewports centred on the view, clipped to the trace.
 * `okStart`/`okEnd` bound where the view may go before the answer stops covering it.
 */
export function planFetch(start, end, widthPx, traceStart, traceEnd) {
  const span = Math.max(end - start, 1e-6);
  const centre = (start + end) / 2;
  const want0 = centre - (FETCH_SPAN / 2) * span;
  const want1 = centre + (FETCH_SPAN / 2) * span;
  const s = Math.max(want0, Math.min(traceStart, start));
  const e = Math.min(want1, Math.max(traceEnd, end));
  const keep = (KEEP_SPAN / 2) * span;
  return {
    start_us: s,
    end_us: e,
    width_px: Math.max(1, Math.round((widthPx * (e - s)) / span)),
    viewSpan: span,
    okStart: s > want0 ? -Infinity : centre - keep,
    okEnd: e < want1 ? Infinity : centre + keep,
  };
}

/** Whether a tile (or the request for one) still serves the view [start, end]. */
export function covers(plan, start, end, widthPx, planWidthPx) {
  if (!plan) return false;
  if (start < plan.okStart || end > plan.okEnd) return false;
  const span = end - start;
  if (span * MAX_ZOOM_IN < plan.viewSpan) return false;
  if (span > plan.viewSpan * KEEP_SPAN) return false;
  const ratio = widthPx / Math.max(planWidthPx, 1);
  return ratio > 0.8 && ratio < 1.25;
}
