// BokehJS for the chart widgets, from the kernel's own bokeh package: never from a CDN.
//
// The three classic-script bundles (bokeh, bokeh-widgets, bokeh-tables, ~2 MB) come once per page
// and BokehJS version over the widget transport, run as <script> tags from Blob URLs, in order.
// Every widget on the page shares one promise per version, kept on window.
import { request } from "../lib/transport.js";
import { followTheme } from "./theme.js";
import { integerStepTicks } from "./ticks.js";

const CACHE_KEY = "__xprofWidgetsBokeh";

/**
 * The BokehJS object matching the kernel's bokeh (`model.get("_bokeh_version")`), loading it on
 * first use. `options` are passed to the transport request (e.g. onBusy).
 */
export function loadBokeh(model, options = {}) {
  const version = model.get("_bokeh_version");
  const cache = (globalThis[CACHE_KEY] ??= {});
  cache[version] ??= fetchBokeh(model, version, options).catch((error) => {
    delete cache[version]; // let a later widget try again
    throw error;
  });
  return cache[version];
}

async function fetchBokeh(model, version, options) {
  const { content, buffers } = await request(model, "bokeh_js", {}, options);
  // Another library (e.g. bokeh.io.output_notebook) may have loaded the same version already;
  // loading it twice would orphan the documents that copy manages.
  const present = globalThis.Bokeh?.[version];
  for (const [i, name] of content.names.entries()) {
    if (present && isLoaded(present, name)) continue;
    await runScript(buffers[i], name);
  }
  const bokeh = globalThis.Bokeh?.[version];
  if (!bokeh) throw new Error(`BokehJS ${version} did not register itself on window.Bokeh`);
  return bokeh;
}

function isLoaded(bokeh, name) {
  if (name === "bokeh-widgets") return "Widgets" in bokeh;
  if (name === "bokeh-tables") return "Tables" in bokeh;
  return true;
}

function runScript(bytes, name) {
  const url = URL.createObjectURL(new Blob([bytes], { type: "text/javascript" }));
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = url;
    script.dataset.xprofWidgets = name;
    script.onload = () => {
      URL.revokeObjectURL(url);
      resolve();
    };
    script.onerror = () => {
      URL.revokeObjectURL(url);
      reject(new Error(`${name}.min.js failed to run`));
    };
    document.head.append(script);
  });
}

/** Resolves once `el` is in the document (Bokeh refuses to embed into a detached element). */
export function whenConnected(el, signal) {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (signal?.aborted) reject(signal.reason);
      else if (el.isConnected) resolve();
      else setTimeout(check, 16);
    };
    check();
  });
}

/**
 * Embed a JSON item (Python: xprof_widgets.widgets._bokeh.json_item) into `el` once it is
 * connected, in the page's theme and following it (./theme.js), step axes ticking whole steps
 * (./ticks.js). `bokeh` is the object loadBokeh
 * resolved to. Resolves to Bokeh's ViewManager of the embedded roots: call its `clear()` when the
 * widget view goes away (that also stops following the theme).
 */
export async function embedItem(el, item, bokeh, signal) {
  await whenConnected(el, signal);
  const manager = await bokeh.embed.embed_item(integerStepTicks(item), el);
  const stop = followTheme(manager, el);
  const clear = manager.clear.bind(manager);
  manager.clear = () => { stop(); clear(); };
  return manager;
}
