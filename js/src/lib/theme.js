// The palette every view draws with: JupyterLab's theme variables (light and dark follow the
// app), with fallbacks for front ends that define none (Colab, VS Code). Put THEME inside a
// view's root rule; its own rules then use var(--xw-...).
export const THEME = `
  --xw-bg: var(--jp-layout-color0, #fff);
  --xw-panel: var(--jp-layout-color1, #fafafa);
  --xw-panel2: var(--jp-layout-color2, #eee);
  --xw-fg: var(--jp-ui-font-color1, rgba(0,0,0,.87));
  --xw-fg2: var(--jp-ui-font-color2, rgba(0,0,0,.6));
  --xw-border: var(--jp-border-color2, #e0e0e0);
  --xw-border1: var(--jp-border-color1, #bdbdbd);
  --xw-accent: var(--jp-brand-color1, #1976d2);
  --xw-warn: var(--jp-warn-color0, #e65100);
  --xw-error: var(--jp-error-color1, #d32f2f);
  --xw-mono: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, monospace);
  font-family: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
  font-size: 12px; color: var(--xw-fg); background: var(--xw-bg);`;

/** The look of the suite's link buttons, shared by every view that shows them. */
export const LINK_CSS = `
.xw-link { font: inherit; font-size: 11px; margin-left: 8px; padding: 1px 6px; cursor: pointer;
  color: var(--xw-accent); background: transparent; border: 1px solid var(--xw-accent); border-radius: 3px; }
.xw-link:hover { background: var(--xw-accent); color: var(--xw-bg); }`;

const THEME_ATTRIBUTES = ["data-jp-theme-light", "data-jp-theme-name", "class"];
const listeners = new Set();
let watching = false;

function notify() {
  for (const listener of listeners) listener();
}

function watch() {
  if (watching || typeof document === "undefined") return;
  watching = true;
  // JupyterLab and Notebook 7 mark the body with the theme's name while its stylesheet loads:
  // listeners run at once and again after the new variables have landed.
  const later = () => { notify(); requestAnimationFrame(notify); setTimeout(notify, 400); };
  new MutationObserver(later).observe(document.body, { attributes: true, attributeFilter: THEME_ATTRIBUTES });
  window.matchMedia?.("(prefers-color-scheme: dark)")?.addEventListener?.("change", later);
}

/** Calls `listener` whenever the page's theme changes; returns the function that stops it. */
export function onThemeChange(listener) {
  watch();
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * The page's palette as the themed element `el` sees it (JupyterLab's variables, else the light
 * fallbacks THEME uses): the colours canvases and BokehJS charts paint with.
 */
export function palette(el) {
  const style = getComputedStyle(el);
  const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
  return {
    bg: read("--jp-layout-color0", "#ffffff"),
    panel: read("--jp-layout-color1", "#fafafa"),
    fg: read("--jp-ui-font-color1", "rgba(0,0,0,.87)"),
    fg2: read("--jp-ui-font-color2", "rgba(0,0,0,.6)"),
    grid: read("--jp-border-color2", "#e0e0e0"),
    border: read("--jp-border-color1", "#bdbdbd"),
  };
}

// The suite (xw.Profiler) is an ipywidgets Tab, whose own CSS gives every tab one fixed width
// and cuts longer titles ("Framework Op Sta"). The suite marks its Tab `xw-suite-tabs`; this
// page-wide rule, put in once by whichever view loads first, sizes each tab to its title and
// wraps the bar onto a second row where the titles do not fit (ipywidgets 8: lm-, 7: p-).
const SUITE_TABS_CSS = `
.xw-suite-tabs > .lm-TabBar .lm-TabBar-content, .xw-suite-tabs > .p-TabBar .p-TabBar-content {
  flex-wrap: wrap !important; }
.xw-suite-tabs > .lm-TabBar .lm-TabBar-tab, .xw-suite-tabs > .p-TabBar .p-TabBar-tab {
  flex: 0 0 auto !important; max-width: none !important; }
.xw-suite-tabs > .lm-TabBar .lm-TabBar-tabLabel, .xw-suite-tabs > .p-TabBar .p-TabBar-tabLabel {
  overflow: visible !important; text-overflow: clip !important; }`;

if (typeof document !== "undefined" && !document.getElementById("xw-suite-tabs-style")) {
  const style = document.createElement("style");
  style.id = "xw-suite-tabs-style";
  style.textContent = SUITE_TABS_CSS;
  document.head.append(style);
}
