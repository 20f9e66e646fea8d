// BokehJS charts in the page's theme. The kernel writes every chart in Bokeh's light defaults
// (xprof_widgets/widgets/_charts.py knows nothing of the page); here the colours that are page
// furniture (plot and border fills, axes, grids, titles, legends, label boxes, and the plain
// dark grey of reference lines such as a roofline's roof) are repainted from the page's palette,
// now and whenever the theme changes. Coloured glyphs carry data: kept. BokehJS's HTML chrome
// sets its colours in shadow roots: the toolbar's icons read --bokeh-icon-color from the chart's
// box; hover tooltips live in the page's body (popovers), where one page rule gives their hosts
// the theme's colours (a rule on the host beats the shadow root's own :host defaults).
import { onThemeChange, palette } from "../lib/theme.js";

const TOOLTIP_STYLE_ID = "xw-bokeh-tooltip-style";
export const TOOLTIP_CSS = `
body > .bk-Tooltip {
  --background-color: var(--jp-layout-color1, #fff); --color: var(--jp-ui-font-color1, #18191d);
  --divider-color: var(--jp-border-color2, #d7d7d8); --border-color: var(--jp-border-color1, #bbbbbd);
  --tooltip-arrow-color: var(--jp-border-color1, #fff); }`;

function ensureTooltipStyle() {
  if (document.getElementById(TOOLTIP_STYLE_ID)) return;
  const style = document.createElement("style");
  style.id = TOOLTIP_STYLE_ID;
  style.textContent = TOOLTIP_CSS;
  document.head.append(style);
}

// Which palette colour replaces a property of a model of that kind. `ink` properties change only
// where the chart left them dark (Bokeh's default ink), `grey` ones only where dark and without
// hue, `paper` ones only where light, so a colour a chart chose on purpose (a red label) stays.
const ROLES = [
  [(t) => t === "Figure" || t === "Plot" || t === "GMap",
    { background_fill_color: ["paper", "bg"], border_fill_color: ["paper", "bg"], outline_line_color: ["line", "grid"] }],
  [(t) => t.endsWith("Axis"), {
    axis_line_color: ["ink", "fg2"], major_tick_line_color: ["ink", "fg2"], minor_tick_line_color: ["ink", "fg2"],
    major_label_text_color: ["ink", "fg"], axis_label_text_color: ["ink", "fg"] }],
  [(t) => t === "Grid", { grid_line_color: ["line", "grid"] }],
  [(t) => t === "Title" || t === "Label" || t === "LabelSet", {
    text_color: ["ink", "fg"], background_fill_color: ["paper", "panel"], border_line_color: ["line", "border"] }],
  [(t) => t === "Legend", {
    label_text_color: ["ink", "fg"], title_text_color: ["ink", "fg"], background_fill_color: ["paper", "panel"],
    border_line_color: ["line", "border"], inactive_fill_color: ["paper", "panel"] }],
  [(t) => ["Line", "Step", "Span", "Scatter"].includes(t), { line_color: ["grey", "fg2"] }],
];

const originals = new WeakMap(); // model -> {property: the colour the kernel wrote}
let probe = null;

/** [r, g, b] (0..255) of a CSS colour, read back through a 2D context's parser. */
function rgbOf(color) {
  probe ??= document.createElement("canvas").getContext("2d");
  probe.fillStyle = "#000";
  probe.fillStyle = color;
  const text = probe.fillStyle;
  const hex = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(text);
  return hex ? hex.slice(1).map((x) => parseInt(x, 16))
    : (/rgba?\(([^)]*)\)/.exec(text)?.[1].split(",").slice(0, 3).map(Number) ?? [0, 0, 0]);
}

/** The colour a property holds: a string, or a glyph's {value} spec (a {field} one is data). */
function plainColor(value) {
  if (typeof value === "string") return value;
  return typeof value?.value === "string" && value.field === undefined ? value.value : null;
}

function fits(kind, value) {
  const color = plainColor(value);
  if (color === null) return false; // null: drawn nowhere, a field: data; leave them so
  const rgb = rgbOf(color);
  const [r, g, b] = rgb.map((c) => c / 255);
  const light = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  if (kind === "grey") return light < 0.45 && Math.max(...rgb) - Math.min(...rgb) < 24;
  return kind === "ink" ? light < 0.45 : kind === "paper" ? light > 0.8 : light > 0.6;
}

/** Repaint one document's furniture with `colors` (a palette()). */
export function themeDocument(doc, colors) {
  for (const model of doc.all_models) {
    const roles = ROLES.find(([matches]) => matches(model.type))?.[1];
    if (!roles) continue;
    let kept = originals.get(model);
    if (!kept) {
      kept = {};
      for (const name of Object.keys(roles)) if (name in model.properties) kept[name] = model[name];
      originals.set(model, kept);
    }
    const changes = {};
    for (const [name, [kind, role]] of Object.entries(roles)) {
      if (name in kept && fits(kind, kept[name]) && plainColor(model[name]) !== colors[role]) changes[name] = colors[role];
    }
    if (Object.keys(changes).length) model.setv(changes);
  }
}

/**
 * Keep the charts `manager` (embed_item's ViewManager) drew into `el` in the page's theme.
 * Returns the function that stops following it.
 */
export function followTheme(manager, el) {
  ensureTooltipStyle();
  const docs = new Set([...manager.roots].map((view) => view.model.document).filter(Boolean));
  let last = "";
  const apply = () => {
    if (!el.isConnected) return; // a detached element sees no theme variables: its light fallbacks
    const colors = palette(el);
    const key = JSON.stringify(colors);
    if (key === last) return; // the body's class changes on every drag: most calls change nothing
    last = key;
    for (const doc of docs) themeDocument(doc, colors);
    el.style.setProperty("--bokeh-icon-color", colors.fg2);
  };
  apply();
  return onThemeChange(apply);
}
