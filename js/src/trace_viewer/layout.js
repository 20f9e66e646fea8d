// Rows of the timeline: the pinned tracks first (they stay in place while the others scroll),
// then one header per section (device core, host), its tracks below it unless the section is
// collapsed, filtered by name; hidden tracks are left out. Heights in CSS pixels.

export const AXIS_H = 30;
export const LABEL_W = 210;
export const MIN_LABEL_W = 80;
/** The widest the label column may be dragged: most of the stage stays timeline. */
export function maxLabelWidth(stageWidth) {
  return Math.max(MIN_LABEL_W, Math.min(900, stageWidth - 160));
}
export const SECTION_H = 24;
export const DEPTH_H = 18;
export const COUNTER_H = 40;
export const TRACK_PAD = 3;

/** The summary's columnar tables as arrays of objects. */
export function tablesOf(summary) {
  const rows = (table) => {
    const keys = Object.keys(table);
    const n = keys.length ? table[keys[0]].length : 0;
    return Array.from({ length: n }, (_, i) => Object.fromEntries(keys.map((k) => [k, table[k][i]])));
  };
  return { sections: rows(summary.sections), tracks: rows(summary.tracks) };
}

/** Height of a track row: one band per nesting depth, or a fixed band for a counter. */
export function trackHeight(track) {
  if (track.kind === "counter") return COUNTER_H;
  return (Math.max(0, track.max_depth) + 1) * DEPTH_H + 2 * TRACK_PAD;
}

/** Sections start collapsed when they hold many tracks (host thread pools), devices never;
 * a host of a distributed profile that is not picked is always one row ("pod-host"). */
export function defaultCollapsed(sections, tracks) {
  const count = new Map();
  for (const t of tracks) count.set(t.section_id, (count.get(t.section_id) ?? 0) + 1);
  return new Set(
    sections.filter((s) => s.kind === "pod-host" || (s.kind !== "device" && (count.get(s.id) ?? 0) > 12)).map((s) => s.id),
  );
}

function matcher(filter) {
  const needle = filter.trim().toLowerCase();
  return needle ? (text) => text.toLowerCase().includes(needle) : null;
}

const NO_MARKS = { pinned: [], hidden: new Set() };

/**
 * The rows to draw, top to bottom: {type: "section"|"track", y, h, label, sectionId, ...}.
 * `marks.pinned` (track ids, in order) come first as rows with `pinned` set, labelled with their
 * section, whatever the filter and collapsed sections; `marks.hidden` (a Set) are left out, and
 * so is a section left with no track. A filter keeps a section whose name matches (with all its
 * tracks) or the matching tracks of the others. Returns {rows, height, trackRow: Map,
 * sectionRow: Map, pinnedH: the pinned rows' height}.
 */
export function buildLayout(tables, collapsed, filter = "", multiHost = false, marks = NO_MARKS) {
  const match = matcher(filter);
  const byId = new Map(tables.sections.map((s) => [s.id, s]));
  const sectionLabel = (sectionId) => {
    const section = byId.get(sectionId) ?? { id: sectionId, name: `section ${sectionId}`, kind: "", host: "" };
    const label = multiHost && section.host && section.kind !== "pod-host" ? `${section.name} · ${section.host}` : section.name;
    return { section, label };
  };
  const trackById = new Map(tables.tracks.map((t) => [t.id, t]));
  const pinned = marks.pinned.filter((id) => trackById.has(id) && !marks.hidden.has(id));
  const pinnedSet = new Set(pinned);
  const groups = new Map();
  for (const t of tables.tracks) {
    if (!groups.has(t.section_id)) groups.set(t.section_id, []);
    if (!pinnedSet.has(t.id) && !marks.hidden.has(t.id)) groups.get(t.section_id).push(t);
  }
  const rows = [];
  const trackRow = new Map();
  const sectionRow = new Map();
  let y = 0;
  const addTrack = (t, extra) => {
    const h = trackHeight(t);
    const row = {
      type: "track", y, h, label: t.name, sectionId: t.section_id, trackId: t.id,
      counter: t.kind === "counter", maxDepth: t.max_depth, nEvents: t.n_events, ...extra,
    };
    rows.push(row);
    trackRow.set(t.id, row);
    y += h;
  };
  for (const id of pinned) {
    const t = trackById.get(id);
    addTrack(t, { pinned: true, label: `${sectionLabel(t.section_id).label} · ${t.name}` });
  }
  const pinnedH = y;
  for (const [sectionId, tracks] of groups) {
    const { section, label } = sectionLabel(sectionId);
    const sectionHit = !match || match(label);
    const shown = sectionHit ? tracks : tracks.filter((t) => match(t.name));
    if (!shown.length) continue;
    const isCollapsed = collapsed.has(sectionId);
    const header = {
      type: "section", y, h: SECTION_H, label, sectionId, collapsed: isCollapsed,
      nTracks: tracks.length, kind: section.kind,
    };
    rows.push(header);
    sectionRow.set(sectionId, header);
    y += SECTION_H;
    if (isCollapsed) continue;
    for (const t of shown) addTrack(t, {});
  }
  return { rows, height: y, trackRow, sectionRow, pinnedH };
}

/** Where a row's top is, below the axis, with the tracks scrolled by `scrollY` (pinned rows
 * do not scroll). */
export function screenTop(row, scrollY) {
  return row.pinned ? row.y : row.y - scrollY;
}

/** The content height under `y` (below the axis): the pinned rows above `layout.pinnedH`, the
 * scrolled ones under them. */
export function contentY(layout, y, scrollY) {
  return y < layout.pinnedH ? y : y + scrollY;
}

/** The row at `y` below the axis, or null. */
export function rowAtScreen(layout, y, scrollY) {
  return y < 0 ? null : rowAt(layout.rows, contentY(layout, y, scrollY));
}

/** The pin and hide buttons at the right end of a track's label: which one is at `x`, if any. */
export const LABEL_BUTTON = 16;
export function labelButtonAt(x, labelW) {
  if (x >= labelW - 4 - LABEL_BUTTON && x < labelW - 4) return "hide";
  if (x >= labelW - 6 - 2 * LABEL_BUTTON && x < labelW - 6 - LABEL_BUTTON) return "pin";
  return null;
}

/** The row at content height `y` (binary search), or null. */
export function rowAt(rows, y) {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const row = rows[mid];
    if (y < row.y) hi = mid - 1;
    else if (y >= row.y + row.h) lo = mid + 1;
    else return row;
  }
  return null;
}

/** Index of the first row that ends below content height `y`. */
export function firstRowBelow(rows, y) {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid].y + rows[mid].h <= y) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Vertical centre (content y) of a depth band of a track row; a section header's centre otherwise. */
export function depthCenter(row, depth) {
  if (row.type !== "track" || row.counter) return row.y + row.h / 2;
  return row.y + TRACK_PAD + (depth + 0.5) * DEPTH_H;
}

/** The nesting depth at content height `y` inside a track row (-1 outside the bands). */
export function depthAt(row, y) {
  if (row.type !== "track" || row.counter) return -1;
  const depth = Math.floor((y - row.y - TRACK_PAD) / DEPTH_H);
  return depth >= 0 && depth <= row.maxDepth ? depth : -1;
}
