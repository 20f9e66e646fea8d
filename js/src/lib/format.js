// Numbers as the views print them. A missing value (null) prints as an em dash.

export const DASH = "—";

/** Microseconds as s / ms / µs / ns. */
export function time(us) {
  if (us === null || us === undefined) return DASH;
  const a = Math.abs(us);
  if (a >= 1e6) return `${(us / 1e6).toFixed(3)} s`;
  if (a >= 1e3) return `${(us / 1e3).toFixed(3)} ms`;
  if (a >= 1) return `${us.toFixed(3)} µs`;
  if (a === 0) return "0";
  return `${(us * 1e3).toFixed(1)} ns`;
}

/** A fraction as a percentage: 12.3%, 0.45%, <0.01%. */
export function percent(fraction) {
  if (fraction === null || fraction === undefined) return DASH;
  const p = fraction * 100;
  if (p === 0) return "0%";
  if (p < 0.01) return "<0.01%";
  if (p < 1) return `${p.toFixed(2)}%`;
  return `${p.toFixed(1)}%`;
}

const PREFIXES = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];

/** A value with an SI prefix and unit: 12.3 TFLOP/s. */
export function si(value, unit) {
  if (value === null || value === undefined) return DASH;
  for (const [scale, prefix] of PREFIXES) {
    if (Math.abs(value) >= scale) return `${sig3(value / scale)} ${prefix}${unit}`;
  }
  return `${value === 0 ? "0" : sig3(value)} ${unit}`;
}

/** Three significant digits: 167, 16.7, 1.67. */
export function sig3(x) {
  const a = Math.abs(x);
  return x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

/** Bytes in binary units. */
export function bytes(n) {
  if (n === null || n === undefined) return DASH;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let k = 0;
  while (Math.abs(v) >= 1024 && k < units.length - 1) {
    v /= 1024;
    k += 1;
  }
  return k ? `${v.toFixed(2)} ${units[k]}` : `${v} B`;
}

/** An integer with thousands separators. */
export function count(n) {
  if (n === null || n === undefined) return DASH;
  return Number(n).toLocaleString("en");
}

/** Background for a utilization: red (0) through yellow to green (1), translucent for themes. */
export function utilizationColor(u) {
  const hue = Math.round(120 * Math.max(0, Math.min(1, u)));
  return `hsla(${hue}, 80%, 45%, 0.30)`;
}

/** Milliseconds with three decimals, no unit (table cells whose header names the unit). */
export function ms(value) {
  return value === null || value === undefined ? DASH : value.toFixed(3);
}

/** A value already in percent: 12.3%. */
export function pct(value, digits = 1) {
  return value === null || value === undefined ? DASH : `${value.toFixed(digits)}%`;
}

/** "TPU v6 Lite × 4"; on a CPU the count is of XLA threads, not devices. */
export function deviceLabel(kind, type, count) {
  if (kind === "CPU") return `${type} (${count} XLA thread${count === 1 ? "" : "s"})`;
  return count > 1 ? `${type} × ${count}` : type;
}
