// Search over the whole trace and going to an event: the view moves to it, its section opens and
// its track scrolls into sight. Methods of TraceView (view.js).
import { request, typed } from "../lib/transport.js";
import { AXIS_H } from "./layout.js";

const MATCH_WORDS = { name: "name", text: "HLO text", stats: "op stats" };

/** "400 name · 500 HLO text": the hits of a search by where they matched (kinds with hits). */
export function hitSplit(nBy) {
  if (!nBy) return "";
  return Object.entries(MATCH_WORDS).filter(([kind]) => Number(nBy[kind] ?? 0) > 0)
    .map(([kind, word]) => `${Number(nBy[kind]).toLocaleString("en")} ${word}`).join(" · ");
}

/** What the timeline marks for a search: its matching name ids as a lookup, its hits' tracks. */
export function searchMarks(nameIds, hitTracks) {
  let top = 0;
  for (const id of nameIds) if (id > top) top = id;
  const names = new Uint8Array(nameIds.length ? top + 1 : 0);
  for (const id of nameIds) names[id] = 1;
  return { names, tracks: new Set(hitTracks) };
}

export const navigationMethods = {
  // ---- search and navigation --------------------------------------------------------------
  searchKey(e) {
    if (e.key === "Enter") {
      e.preventDefault();
      this.stepSearch(e.shiftKey ? -1 : 1);
    } else if (e.key === "Escape") {
      e.preventDefault();
      this.stage.focus({ preventScroll: true });
    }
  },

  async stepSearch(direction) {
    const text = this.searchInput.value.trim();
    if (!text) return;
    if (text !== this.search.pattern || this.searchMatch !== this.search.match) {
      const regex = text.length > 2 && text.startsWith("/") && text.endsWith("/");
      const pattern = regex ? text.slice(1, -1) : text;
      this.hitsLabel.textContent = "searching…";
      let answer;
      try {
        // `match` only when one kind is asked for: a pod's search knows no kinds.
        const params = { pattern, regex, case: false, ...(this.searchMatch === "any" ? {} : { match: this.searchMatch }) };
        answer = await request(this.model, "search", params, {
          channel: "search", onBusy: () => (this.hitsLabel.textContent = "kernel busy…"),
        });
      } catch (error) {
        this.hitsLabel.textContent = "";
        this.splitLabel.textContent = "";
        this.search = { pattern: null, hits: null, index: -1 };
        this.requestDraw();
        this.setBanner(error.message ?? String(error), "error");
        setTimeout(() => this.banner.dataset.kind === "error" && this.dismissError(), 4000);
        return;
      }
      if (!answer) return;
      const { content, buffers } = answer;
      const hits = { event: typed(buffers[0], Uint32Array), start: typed(buffers[1], Float64Array), track: typed(buffers[2], Uint32Array), truncated: content.truncated };
      // A reply without name ids or kinds (a pod's) marks the hits' tracks only, offers no filter.
      const marks = searchMarks(buffers[3] ? typed(buffers[3], Uint32Array) : [], hits.track);
      this.matchSelect.hidden = !content.n_by;
      this.search = { pattern: text, match: this.searchMatch, hits, index: -1, marks };
      this.splitLabel.textContent = hitSplit(content.n_by);
      this.el.dataset.hitSplit = this.splitLabel.textContent;
      this.requestDraw();
      if (!hits.event.length) {
        this.hitsLabel.textContent = "no hits";
        this.el.dataset.hits = "0";
        return;
      }
      this.el.dataset.hits = String(hits.event.length);
      // Start from the first hit at or after the view's start.
      let first = hits.start.findIndex((t) => t >= this.view.start);
      if (first < 0) first = 0;
      this.search.index = direction > 0 ? first - 1 : first;
    }
    const { hits } = this.search;
    if (!hits || !hits.event.length) return;
    const n = hits.event.length;
    this.search.index = (this.search.index + direction + n) % n;
    const i = this.search.index;
    this.hitsLabel.textContent = `${i + 1} / ${n.toLocaleString("en")}${hits.truncated ? "+" : ""}`;
    this.goToEvent(hits.event[i], hits.start[i], hits.track[i]);
  },

  // The hit kind (all, name, HLO text, op stats) changed: the same query asked again for that kind.
  setSearchMatch(match) {
    this.searchMatch = match;
    if (this.search.pattern) this.stepSearch(1);
  },

  // The search box emptied: no hits marked any more.
  clearSearch() {
    if (this.searchInput.value.trim() || !this.search.pattern) return;
    this.search = { pattern: null, hits: null, index: -1 };
    this.hitsLabel.textContent = "";
    this.splitLabel.textContent = "";
    this.el.dataset.hits = "";
    this.requestDraw();
  },

  dismissError() {
    this.banner.dataset.kind = "";
    this.clearBanner();
  },

  // Select an event and bring it into view (its section expanded, its track scrolled to).
  goToEvent(event, startUs, track) {
    this.setSelection([event], true);
    const place = (start, dur, trackId, depth) => {
      this.focus = { event, start, end: start + dur, track: trackId, depth };
      const span = this.view.end - this.view.start;
      if (dur > span * 0.8) this.setView(start - dur * 0.1, start + dur * 1.1);
      else if (start < this.view.start + span * 0.05 || start + dur > this.view.end - span * 0.05) {
        const centre = start + dur / 2;
        this.setView(centre - span / 2, centre + span / 2);
      }
      if (trackId !== undefined) this.revealTrack(trackId);
    };
    if (startUs !== undefined) place(startUs, 0, track, -1);
    request(this.model, "details", { event }, { channel: "goto" }).then((answer) => {
      if (!answer) return;
      const d = answer.content;
      if (d.start_us !== undefined) {
        this.spans.set(event, [d.start_us, d.start_us + (d.duration_us ?? 0)]);
        place(d.start_us, d.duration_us ?? 0, typeof d.track === "number" ? d.track : track, d.depth ?? 0);
      }
    }, () => {});
  },

  revealTrack(trackId) {
    if (this.marks.hidden.has(trackId)) this.showTrack(trackId);
    const section = this.trackSection.get(trackId);
    if (this.collapsed.has(section)) {
      this.collapsed.delete(section);
      this.relayout();
      this.ensureData();
    }
    let row = this.layout.trackRow.get(trackId);
    if (!row && this.filter) {
      this.filterInput.value = "";
      this.setFilter("");
      row = this.layout.trackRow.get(trackId);
    }
    if (!row || row.pinned) return;
    // The scrolled rows show from pinnedH down: content y from scrollY + pinnedH.
    const pinnedH = this.layout.pinnedH;
    const visibleH = this.height - AXIS_H - pinnedH;
    if (row.y < this.scrollY + pinnedH || row.y + Math.min(row.h, visibleH) > this.scrollY + pinnedH + visibleH) {
      this.scrollY = row.y - pinnedH - Math.max(0, (visibleH - row.h) / 3);
      this.clampScroll();
      this.requestDraw();
    }
  },
};
