// The trace viewer's pure parts: time axis, layout, fetch planning, answer decoding, colours.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PALETTE_SIZE, hashString, paletteIndex } from "../src/trace_viewer/colors.js";
import {
  AXIS_H, DEPTH_H, SECTION_H, TRACK_PAD, buildLayout, defaultCollapsed, depthAt, depthCenter, rowAt,
  tablesOf,
} from "../src/trace_viewer/layout.js";
import { NameTable, covers, decodeTile, planFetch } from "../src/trace_viewer/tile.js";
import { formatDuration, formatTime, niceStep, ticks, unitFor } from "../src/trace_viewer/timescale.js";

test("every module of the widget links (named imports exist)", async () => {
  const module = await import("../src/trace_viewer/index.js");
  assert.equal(typeof module.default.render, "function");
});

test("tick steps are 1, 2 or 5 times a power of ten, in the unit the zoom calls for", () => {
  assert.equal(niceStep(0.7), 1);
  assert.equal(niceStep(1.5), 2);
  assert.equal(niceStep(3), 5);
  assert.equal(niceStep(7), 10);
  assert.equal(niceStep(0.0031), 0.005);
  assert.equal(unitFor(0.2).name, "ns");
  assert.equal(unitFor(20).name, "µs");
  assert.equal(unitFor(5000).name, "ms");
  assert.equal(unitFor(2e7).name, "s");
  const axis = ticks(1000, 2000, 1000, 100);
  assert.equal(axis.step, 100);
  assert.deepEqual(axis.values.slice(0, 3), [1000, 1100, 1200]);
  assert.equal(axis.label(1100), "1.1 ms"); // a 1 ms span reads in ms
  const fine = ticks(10, 10.5, 1000, 100);
  assert.equal(fine.unit.name, "µs"); // 50 ns steps 10 µs in: µs with 2 decimals
  assert.equal(fine.label(10.05), "10.05 µs");
  assert.equal(ticks(0.1, 0.6, 1000, 100).label(0.15), "150 ns");
  assert.equal(ticks(0, 98e6, 600).label(2e7), "20 s");
});

test("durations and times read in the unit that fits them", () => {
  assert.equal(formatDuration(0.29), "290 ns");
  assert.equal(formatDuration(12.345), "12.3 µs");
  assert.equal(formatDuration(676120), "676 ms");
  assert.equal(formatDuration(1.25e6), "1.25 s");
  assert.equal(formatDuration(0), "0 µs");
  assert.equal(formatTime(72347028.1, 0.001), "72.347028 s");
});

const SUMMARY = {
  sections: { id: [0, 1, 5], name: ["/device:TPU:0", "/device:TPU:1", "/host:CPU"], kind: ["device", "device", "host"], host: ["h", "h", "h"] },
  tracks: {
    id: [0, 1, 2, 3, ...Array.from({ length: 13 }, (_, i) => 4 + i)],
    section_id: [0, 0, 1, 1, ...Array(13).fill(5)],
    name: ["XLA Modules", "XLA Ops", "XLA Modules", "power", ...Array.from({ length: 13 }, (_, i) => `thread ${i}`)],
    kind: ["slices", "slices", "slices", "counter", ...Array(13).fill("slices")],
    max_depth: [0, 2, 0, 0, ...Array(13).fill(1)],
    n_events: Array(17).fill(10),
  },
};

test("layout: a header per section, tracks below unless collapsed, heights by depth", () => {
  const tables = tablesOf(SUMMARY);
  const collapsed = defaultCollapsed(tables.sections, tables.tracks);
  assert.deepEqual([...collapsed], [5]); // the host with 13 threads starts collapsed, devices never
  const layout = buildLayout(tables, collapsed);
  assert.deepEqual(layout.rows.map((r) => r.type), ["section", "track", "track", "section", "track", "track", "section"]);
  const ops = layout.trackRow.get(1);
  assert.equal(ops.y, SECTION_H + DEPTH_H + 2 * TRACK_PAD);
  assert.equal(ops.h, 3 * DEPTH_H + 2 * TRACK_PAD);
  assert.equal(rowAt(layout.rows, ops.y + 1), ops);
  assert.equal(depthAt(ops, ops.y + TRACK_PAD + 2.5 * DEPTH_H), 2);
  assert.equal(depthAt(ops, ops.y + 1), -1);
  assert.equal(depthCenter(ops, 1), ops.y + TRACK_PAD + 1.5 * DEPTH_H);
  assert.equal(layout.trackRow.get(3).counter, true);
  assert.equal(layout.sectionRow.get(5).collapsed, true);
  assert.equal(rowAt(layout.rows, layout.height + 5), null);
  assert.equal(AXIS_H > 0, true);
});

test("layout filter keeps matching sections whole and matching tracks of the others", () => {
  const tables = tablesOf(SUMMARY);
  const byTrack = buildLayout(tables, new Set(), "ops");
  assert.deepEqual(byTrack.rows.map((r) => r.label), ["/device:TPU:0", "XLA Ops"]);
  const bySection = buildLayout(tables, new Set(), "tpu:1");
  assert.deepEqual(bySection.rows.map((r) => r.label), ["/device:TPU:1", "XLA Modules", "power"]);
  assert.equal(buildLayout(tables, new Set(), "nothing like it").rows.length, 0);
});

test("a fetch covers three viewports; the view may roam two and zoom in four times", () => {
  const plan = planFetch(500, 1500, 800, 0, 1e6);
  assert.equal(plan.start_us, 0); // clipped at the trace start
  assert.equal(plan.end_us, 2500);
  assert.equal(plan.width_px, 2000);
  assert.equal(plan.okStart, -Infinity); // nothing further left to fetch
  assert.equal(plan.okEnd, 2000);
  assert.ok(covers(plan, -200, 800, 800, 800));
  assert.ok(!covers(plan, 1100, 2100, 800, 800)); // left the 2x region
  assert.ok(covers(plan, 900, 1150, 800, 800)); // 4x in
  assert.ok(!covers(plan, 900, 1140, 800, 800)); // more than 4x in
  assert.ok(!covers(plan, 0, 2001, 800, 800)); // zoomed out past 2x
  assert.ok(!covers(plan, 500, 1500, 1200, 800)); // the canvas grew
  const middle = planFetch(5000, 6000, 800, 0, 1e6);
  assert.deepEqual([middle.start_us, middle.end_us, middle.okStart, middle.okEnd], [4000, 7000, 4500, 6500]);
});

function buffer(TypedArray, values) {
  const typed = TypedArray.from(values);
  return new Uint8Array(typed.buffer);
}

test("a window answer decodes into per-track ranges and learns its names", () => {
  const names = new NameTable();
  const content = {
    start_us: 100, end_us: 200, width_px: 1000,
    tracks: [[0, 2, 0], [3, 0, 2], [1, 1, 0]],
    summaries: [[5, 1]],
    strings: [[7, "fusion.1"], [9, "<img src=x onerror=alert(1)>"]],
    n_flows: 1, events_in_window: 12, query_ms: 0.5,
  };
  const buffers = [
    buffer(Float32Array, [0, 10, 50]), buffer(Float32Array, [5, 20, 1]), buffer(Int32Array, [7, 9, 7]),
    buffer(Uint32Array, [1, 4, 1]), buffer(Uint32Array, [11, 12, 13]), buffer(Uint16Array, [0, 0, 1]),
    buffer(Float32Array, [0, 30]), buffer(Float64Array, [1, 2]), buffer(Float64Array, [3, 8]),
    buffer(Float64Array, [2, 5]), buffer(Float32Array, [1, 52]), buffer(Uint32Array, [0, 0, 11, 1, 1, 13]),
    buffer(Float32Array, [0]), buffer(Float32Array, [90]),
  ];
  const tile = decodeTile(content, buffers, { viewSpan: 33, okStart: 0, okEnd: 1 }, names);
  assert.deepEqual(tile.slices.get(0), [0, 2]);
  assert.deepEqual(tile.slices.get(1), [2, 3]);
  assert.deepEqual(tile.counters.get(3), [0, 2]);
  assert.deepEqual(tile.summaries.get(5), [0, 1]);
  assert.deepEqual(tile.counterRange.get(3), [0, 8]);
  assert.equal(tile.sCount[1], 4);
  assert.equal(tile.nFlows, 1);
  assert.equal(names.name(9), "<img src=x onerror=alert(1)>");
  assert.equal(tile.color[0], paletteIndex("fusion.1"));
  assert.equal(tile.missingNames, false);
  const later = decodeTile({ ...content, strings: [], tracks: [[0, 1, 0]] }, [buffer(Float32Array, [0]),
    buffer(Float32Array, [1]), buffer(Int32Array, [42]), ...buffers.slice(3)], {}, names);
  assert.equal(later.missingNames, true);
});

test("colours come from a stable hash of the name", () => {
  assert.equal(hashString("fusion.1"), hashString("fusion.1"));
  assert.notEqual(hashString("fusion.1"), hashString("fusion.2"));
  const index = paletteIndex("all-reduce.3");
  assert.ok(index >= 0 && index < PALETTE_SIZE);
});
