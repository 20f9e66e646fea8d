// The Trace Viewer on a distributed profile: hosts not picked are one collapsed row each,
// clicking one asks the kernel for it, a new summary keeps what the user had collapsed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { POD_HOST, hostMethods } from "../src/trace_viewer/hosts.js";
import { buildLayout, defaultCollapsed, tablesOf } from "../src/trace_viewer/layout.js";

function podSummary(picked) {
  const sections = { id: [], name: [], kind: [], host: [] };
  const tracks = { id: [], section: [], section_id: [], name: [], kind: [], max_depth: [], n_events: [] };
  const hosts = ["h0", "h1", "h2"];
  hosts.forEach((host, k) => {
    const own = picked.includes(host);
    const section = own ? k : 10 + k;
    sections.id.push(section);
    sections.name.push(own ? "/device:TPU:0" : host);
    sections.kind.push(own ? "device" : POD_HOST);
    sections.host.push(host);
    tracks.id.push(own ? k : 20 + k);
    tracks.section.push(own ? "/device:TPU:0" : host);
    tracks.section_id.push(section);
    tracks.name.push(own ? "XLA Ops" : "busy");
    tracks.kind.push("slices");
    tracks.max_depth.push(own ? 2 : 0);
    tracks.n_events.push(100);
  });
  return { n_events: 300, start_us: 0, end_us: 10, sections, tracks, pod: { hosts, picked } };
}

function fakeView(summary) {
  const saved = [];
  const view = Object.assign(Object.create(hostMethods), {
    model: {
      values: { _summary: summary },
      get(key) { return this.values[key]; },
      set(key, value) { this.values[key] = value; },
      save_changes() { saved.push({ ...this.values }); },
    },
    relayout() {}, ensureData() {},
  });
  view.setSummary(summary);
  return { view, saved };
}

test("hosts not picked start collapsed, one row labelled by the host", () => {
  const tables = tablesOf(podSummary(["h1"]));
  const collapsed = defaultCollapsed(tables.sections, tables.tracks);
  assert.deepEqual([...collapsed].sort(), [10, 12]);
  const layout = buildLayout(tables, collapsed, "", true);
  assert.deepEqual(layout.rows.filter((r) => r.type === "section").map((r) => r.label),
    ["h0", "/device:TPU:0 · h1", "h2"]);
  assert.equal(layout.rows.filter((r) => r.type === "track").length, 1);
});

test("a click on a host's row picks it; other sections toggle as before", () => {
  const { view, saved } = fakeView(podSummary(["h1"]));
  assert.equal(view.pickHostOf(12), true);
  assert.deepEqual(saved.at(-1).hosts, ["h1", "h2"]);
  assert.equal(view.pickHostOf(1), false);
});

test("a new summary keeps the user's collapsed sections and collapses new host rows", () => {
  const { view } = fakeView(podSummary(["h0", "h1"]));
  view.collapsed.add(0); // the user collapsed h0's TPU
  view.model.values._summary = podSummary(["h0"]);
  view.summaryFromModel();
  assert.deepEqual([...view.collapsed].sort((a, b) => a - b), [0, 11, 12]);
  assert.deepEqual(view.pickedHosts(), ["h0"]);
});
