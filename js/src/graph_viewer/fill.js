// What the page needs of a graph answer without the layout (which runs in the worker, with dagre):
// a node's fill. Kept apart from layout.js so the widget's bundle holds
// dagre once, inside the worker's code.

/** A node's fill by its share of device time: the page's background (none) to red (all), so a
 * dark theme stays dark; null when the profile has no time for it. `base` is "#rrggbb". */
export function shareFill(share, base = "#ffffff") {
  if (share === null || share === undefined || !Number.isFinite(share)) return null;
  const t = Math.sqrt(Math.min(1, Math.max(0, share)));
  const rgb = parseHex(base);
  const mix = [255, 0, 0].map((red, i) => Math.round(rgb[i] + (red - rgb[i]) * t));
  return `#${mix.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

/** [r, g, b] of "#rgb", "#rrggbb" or "rgb(r, g, b)"; white for anything else. */
export function parseHex(color) {
  const c = String(color).trim();
  const rgb = c.match(/^rgba?\((\d+)\D+(\d+)\D+(\d+)/);
  if (rgb) return rgb.slice(1, 4).map(Number);
  const hex = c.match(/^#([0-9a-f]{3}|[0-9a-f]{6})$/i);
  if (!hex) return [255, 255, 255];
  const digits = hex[1].length === 3 ? [...hex[1]].map((d) => d + d) : hex[1].match(/../g);
  return digits.map((d) => parseInt(d, 16));
}
