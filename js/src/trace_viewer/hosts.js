// The hosts of a distributed profile (a PodProfile): each host not picked is one row of busy
// time (a section of kind "pod-host"); picking a host (its row, or the Hosts menu) asks the
// kernel, which sends a new summary with that host's sections and tracks. Methods of TraceView.
import { h } from "../lib/dom.js";
import { defaultCollapsed, tablesOf } from "./layout.js";

export const POD_HOST = "pod-host";

export const hostMethods = {
  /** Reads a summary: tables, names, and (for a pod) the picked hosts; keeps what the user
   * collapsed or expanded among sections seen before. */
  setSummary(summary) {
    this.summary = summary;
    this.tables = tablesOf(summary);
    this.trackSection = new Map(this.tables.tracks.map((t) => [t.id, t.section_id]));
    this.trackNames = new Map(this.tables.tracks.map((t) => [t.id, t.name]));
    this.sectionById = new Map(this.tables.sections.map((s) => [s.id, s]));
    this.multiHost = new Set(this.tables.sections.map((s) => s.host)).size > 1;
    this.pod = summary.pod ?? null;
    const defaults = defaultCollapsed(this.tables.sections, this.tables.tracks);
    const seen = this.seenSections ?? new Set();
    const kept = new Set([...(this.collapsed ?? [])].filter((id) => this.sectionById.has(id)));
    for (const id of defaults) if (!seen.has(id) || this.sectionById.get(id).kind === POD_HOST) kept.add(id);
    this.collapsed = kept;
    this.seenSections = new Set([...seen, ...this.sectionById.keys()]);
    if (this.hostMenu) this.fillHostMenu();
    if (this.trackMenu) this.fillMarkMenus(); // a picked host's tracks now have names
  },

  /** A new summary from the kernel (the picked hosts changed). */
  summaryFromModel() {
    this.setSummary(this.model.get("_summary"));
    this.relayout();
    this.plan = null;
    this.ensureData();
  },

  pickedHosts() {
    return this.pod ? [...this.pod.picked] : [];
  },

  pickHosts(hosts) {
    const order = new Map((this.pod?.hosts ?? []).map((name, i) => [name, i]));
    const unique = [...new Set(hosts)].sort((a, b) => order.get(a) - order.get(b));
    this.model.set("hosts", unique);
    this.model.save_changes();
  },

  /** Whether a click on a section header picked a host instead of expanding the section. */
  pickHostOf(sectionId) {
    const section = this.sectionById.get(sectionId);
    if (section?.kind !== POD_HOST) return false;
    this.pickHosts([...this.pickedHosts(), section.host]);
    return true;
  },

  buildHostMenu() {
    this.hostLabel = h("summary", { title: "Hosts shown with all their tracks; the others are one row of busy time each" });
    this.hostList = h("div", { className: "xw-tv-host-list" });
    this.hostMenu = h("details", { className: "xw-tv-hosts xw-tv-host-menu" }, this.hostLabel, this.hostList);
    this.fillHostMenu();
    return this.hostMenu;
  },

  fillHostMenu() {
    const picked = new Set(this.pickedHosts());
    this.hostLabel.textContent = `Hosts (${picked.size} of ${this.pod.hosts.length} shown)`;
    this.hostList.replaceChildren(...this.pod.hosts.map((name) => {
      const box = h("input", { type: "checkbox", checked: picked.has(name), dataset: { host: name } });
      box.addEventListener("change", () => {
        const now = new Set(this.pickedHosts());
        if (box.checked) now.add(name);
        else now.delete(name);
        this.pickHosts([...now]);
      });
      return h("label", { className: "xw-tv-check" }, box, name);
    }));
  },
};
