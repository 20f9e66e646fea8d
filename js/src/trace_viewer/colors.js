// Colours: one per event name (a stable hash, so a name keeps its colour across views and
// sessions), and the JupyterLab theme read from its CSS variables.

export const PALETTE_SIZE = 48;

/** FNV-1a over UTF-16 code units: cheap, stable, well spread. */
export function hashString(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function paletteIndex(name) {
  return hashString(name) % PALETTE_SIZE;
}

/**
 * Fill colours per palette entry, their merged-run (desaturated) versions and the text colour
 * that reads on each. Hues step by the golden angle so neighbours in the palette differ.
 */
export function makePalette(dark) {
  const fill = [];
  const merged = [];
  const text = [];
  for (let i = 0; i < PALETTE_SIZE; i++) {
    const hue = (i * 137.508) % 360;
    const sat = 48 + (i % 3) * 10;
    const light = dark ? 36 + (i % 4) * 4 : 70 - (i % 4) * 5;
    fill.push(`hsl(${hue.toFixed(1)}, ${sat}%, ${light}%)`);
    merged.push(`hsl(${hue.toFixed(1)}, ${Math.round(sat * 0.3)}%, ${dark ? light - 6 : light + 6}%)`);
    text.push(dark ? "#f2f2f2" : "#1a1a1a");
  }
  return { fill, merged, text };
}

const THEME_VARS = {
  bg: ["--jp-layout-color0", "#ffffff"],
  panel: ["--jp-layout-color1", "#ffffff"],
  panel2: ["--jp-layout-color2", "#eeeeee"],
  fg: ["--jp-ui-font-color1", "rgba(0, 0, 0, 0.87)"],
  fg2: ["--jp-ui-font-color2", "rgba(0, 0, 0, 0.54)"],
  fg3: ["--jp-ui-font-color3", "rgba(0, 0, 0, 0.38)"],
  border: ["--jp-border-color2", "#e0e0e0"],
  border1: ["--jp-border-color1", "#bdbdbd"],
  accent: ["--jp-brand-color1", "#1976d2"],
  warn: ["--jp-warn-color0", "#e65100"],
  font: ["--jp-ui-font-family", "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"],
  mono: ["--jp-code-font-family", "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"],
};

// A CSS colour in any syntax -> [r, g, b] through the canvas' own parser.
function rgbOf(ctx, color) {
  ctx.fillStyle = "#000000";
  ctx.fillStyle = color;
  const value = ctx.fillStyle;
  if (value.startsWith("#")) {
    return [1, 3, 5].map((i) => parseInt(value.slice(i, i + 2), 16));
  }
  const parts = value.match(/[\d.]+/g) ?? ["0", "0", "0"];
  return parts.slice(0, 3).map(Number);
}

function luminance([r, g, b]) {
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

/** The theme as the canvas needs it, from the CSS variables in effect at `el` (with fallbacks). */
export function readTheme(el, ctx) {
  const style = getComputedStyle(el);
  const theme = {};
  for (const [key, [name, fallback]] of Object.entries(THEME_VARS)) {
    theme[key] = style.getPropertyValue(name).trim() || fallback;
  }
  theme.dark = luminance(rgbOf(ctx, theme.bg)) < 0.5;
  theme.selection = theme.dark ? "#ffffff" : "#000000";
  theme.flow = theme.dark ? "#ff9e40" : "#d84315";
  theme.counter = theme.dark ? "rgba(100, 181, 246, 0.45)" : "rgba(25, 118, 210, 0.30)";
  theme.counterLine = theme.dark ? "#64b5f6" : "#1565c0";
  theme.summary = theme.dark ? "rgba(144, 164, 174, 0.75)" : "rgba(84, 110, 122, 0.6)";
  theme.mark = theme.dark ? "rgba(255, 214, 0, 0.16)" : "rgba(255, 193, 7, 0.20)";
  theme.markEdge = theme.dark ? "#ffd600" : "#f9a825";
  theme.bookmark = theme.dark ? "#ef6c00" : "#e65100";
  theme.bookmarkBand = theme.dark ? "rgba(239, 108, 0, 0.10)" : "rgba(230, 81, 0, 0.07)";
  theme.box = theme.dark ? "rgba(100, 181, 246, 0.18)" : "rgba(25, 118, 210, 0.12)";
  theme.grid = theme.dark ? "rgba(255, 255, 255, 0.06)" : "rgba(0, 0, 0, 0.06)";
  theme.sectionBg = theme.dark ? "rgba(255, 255, 255, 0.05)" : "rgba(0, 0, 0, 0.035)";
  theme.palette = makePalette(theme.dark);
  return theme;
}
