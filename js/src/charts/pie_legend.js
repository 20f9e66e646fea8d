// A pie's legend as HTML beside its BokehJS disc (the slices come with the item from
// xprof_widgets/widgets/_pies.py): a long name is cut as the tables cut it (lib/names.js
// elideName: a kernel's signature keeps its function's name, template arguments and namespaces go
// first), and hovering an entry shows the full name and time, which a canvas legend cannot.
import { h } from "../lib/dom.js";
import { elideName } from "../lib/names.js";

export const LEGEND_CHARS = 40; // as many as the legend had when Bokeh drew it

/** Each slice's entry: the cut name and share as text, the full name and time as its title. */
export function legendEntries(slices, max = LEGEND_CHARS) {
  return slices.map(({ name, share, value, color }) => ({
    text: `${elideName(name, max)} (${share})`, title: `${name}\n${value} (${share})`, color,
  }));
}

/** The legend list of a pie item's `legend` slices. */
export function pieLegend(slices) {
  return h("ul", { className: "xw-pie-legend" }, legendEntries(slices).map(({ text, title, color }) =>
    h("li", { title }, h("span", { className: "xw-pie-key", style: { background: color } }), text)));
}
