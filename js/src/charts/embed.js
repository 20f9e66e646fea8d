// Charts the kernel sends as JSON items (xprof_widgets/widgets/_charts.py), drawn with the
// BokehJS of the kernel's bokeh (./bokeh.js). One call draws a list of items side by side.
import { h } from "../lib/dom.js";
import { embedItem, loadBokeh } from "./bokeh.js";
import { pieLegend } from "./pie_legend.js";

/**
 * Draw `charts` ([{key, title, item}]) into `container`, each in its own box
 * (`data-chart=key`). Resolves to the BokehJS view managers (call `.remove?.()` / `.clear?.()`
 * on dispose). A chart that fails says so in its box; the others still draw.
 */
export async function drawCharts(model, container, charts, signal) {
  const boxes = charts.map((c) => h("div", { className: "xw-chart", dataset: { chart: c.key } }));
  container.replaceChildren(...boxes);
  if (!charts.length) return [];
  const bokeh = await loadBokeh(model);
  const views = [];
  for (const [i, chart] of charts.entries()) {
    try {
      views.push(await embedItem(boxes[i], chart.item, bokeh, signal));
      if (chart.item.legend) boxes[i].append(pieLegend(chart.item.legend)); // a pie's (_pies.py)
      boxes[i].dataset.drawn = "1";
    } catch (error) {
      if (signal?.aborted) return views;
      boxes[i].replaceChildren(h("span", { className: "xw-chart-problem" },
        `${chart.title ?? chart.key}: ${error.message ?? error}`));
    }
  }
  return views;
}

/** Forget drawn charts (their BokehJS views and documents). */
export function clearCharts(views) {
  for (const view of views ?? []) {
    view.clear?.();
    view.remove?.();
  }
}
