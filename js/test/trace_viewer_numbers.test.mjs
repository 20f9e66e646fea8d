// The trace viewer's labels, numbers and search marks (issue 22 items 5, 6, 7, 10): pure parts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { deviceDiffers, statValue, totalText } from "../src/trace_viewer/dom.js";
import { elideMiddle, fitLabel, shortenIds } from "../src/trace_viewer/labels.js";
import { hitSplit, searchMarks } from "../src/trace_viewer/navigate.js";
import { formatEventTime, formatPicoseconds, formatTime, ticks } from "../src/trace_viewer/timescale.js";

const chars = (t) => t.length * 7; // a monospace stand-in for measureText: 7 px a character

test("the axis labels in the span's unit: a 1.75 s view reads in s, not 19000 ms", () => {
  const axis = ticks(18.5e6, 20.25e6, 1200, 110);
  assert.equal(axis.unit.name, "s");
  assert.equal(axis.step, 2e5);
  const labels = axis.values.map(axis.label);
  assert.deepEqual(labels.slice(0, 3), ["18.6 s", "18.8 s", "19.0 s"]);
  assert.ok(labels.every((l) => l.endsWith(" s")), labels.join());
  const fromZero = ticks(0, 1.75e6, 800, 110);
  assert.deepEqual(fromZero.values.slice(0, 2).map(fromZero.label), ["0 s", "0.5 s"]);
  // A 300 ms view at 19 s reads in s too (its 50 ms step needs 2 decimals there)...
  const near = ticks(19e6, 19.3e6, 1200, 110);
  assert.equal(near.unit.name, "s");
  assert.equal(near.label(19.05e6), "19.05 s");
  // ...a 5 ms view there in ms (its 0.5 ms step would need 4 decimals in s), near 0 in ms.
  const fine = ticks(19e6, 19.005e6, 1200, 110);
  assert.equal(fine.label(19.0005e6), "19000.5 ms");
  assert.equal(ticks(0, 300e3, 1200, 110).label(50e3), "50 ms");
});

test("the tooltip and the details print one start for one event", () => {
  assert.equal(formatEventTime(98204.5, 1200), "98.20 ms");
  assert.equal(formatEventTime(98204.5, 1200), formatTime(98204.5, 12));
  assert.equal(formatEventTime(1265599.387, 0.5), "1265.599387 ms"); // 5 ns resolution
});

test("stats named *_ps read as durations, with their raw value kept for the title", () => {
  assert.equal(formatPicoseconds(8154247500), "8.15 ms");
  assert.equal(formatPicoseconds("8154247500"), "8.15 ms"); // integers past 2**53 come as strings
  assert.equal(formatPicoseconds("0x12"), null);
  assert.equal(statValue("device_duration_ps", 8154247500), "8.15 ms");
  assert.equal(statValue("flops", 8154247500), "8,154,247,500");
  assert.equal(statValue("hlo_op", "fusion.1"), "fusion.1");
  assert.equal(statValue("shape_ps", { a: 1 }), '{"a":1}');
});

test("the selection's total names device time and spans where they differ by over 0.5%", () => {
  const rows = [{ name: "copy-done.4", total_us: 70.539e6, device_total_us: 77.773e6 }];
  assert.equal(totalText(rows), "device time 77.773 s (what the Op Profile counts) · spans 70.539 s");
  assert.equal(totalText([{ total_us: 1000, device_total_us: 1004 }]), "total 1.000 ms");
  assert.equal(totalText([{ total_us: 1000, device_total_us: null }]), "total 1.000 ms");
  assert.equal(deviceDiffers(1006, 1000), true);
  assert.equal(deviceDiffers(1004, 1000), false);
  assert.equal(deviceDiffers(null, 1000), false);
});

test("long numeric ids keep their start and end; labels cut in the middle keep the suffix", () => {
  assert.equal(shortenIds("tf_XLAEigen/-8948125363344516372"), "tf_XLAEigen/-8948…6372");
  assert.equal(shortenIds("thread 12345"), "thread 12345");
  const label = "pyper:trainer:0:0 (4037) worker thread pool · rank 1";
  const cut = elideMiddle(label, 30 * 7, chars);
  assert.ok(cut.length <= 30 && cut.includes("…"), cut);
  assert.ok(cut.startsWith("pyper:trainer:0:"), cut);
  assert.ok(cut.endsWith("rank 1"), cut);
  assert.equal(elideMiddle("short", 100, chars), "short");
  assert.equal(elideMiddle("abcdef", 7, chars), null);
  assert.equal(fitLabel("tf_XLAEigen/-8948125363344516372", 300, chars), "tf_XLAEigen/-8948…6372");
});

test("search: hits split by where they matched; marks look up name ids and tracks", () => {
  assert.equal(hitSplit({ name: 400, text: 500 }), "400 name · 500 HLO text");
  assert.equal(hitSplit({ name: 1200, text: 0, stats: 0 }), "1,200 name");
  assert.equal(hitSplit({ name: 0, text: 12, stats: 3 }), "12 HLO text · 3 op stats");
  assert.equal(hitSplit(undefined), "");
  const marks = searchMarks(new Uint32Array([3, 7]), new Uint32Array([2, 2, 5]));
  assert.deepEqual([...marks.names], [0, 0, 0, 1, 0, 0, 0, 1]);
  assert.deepEqual([...marks.tracks], [2, 5]);
  assert.equal(searchMarks(new Uint32Array([]), []).names.length, 0);
});
