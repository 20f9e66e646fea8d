// Time on the axis: tick steps, units chosen by zoom, and durations as people read them.
// Every time here is microseconds after the profile start (the protocol's unit).

const UNITS = [
  { name: "ns", perUs: 1e3, upTo: 1 },
  { name: "µs", perUs: 1, upTo: 1e3 },
  { name: "ms", perUs: 1e-3, upTo: 1e6 },
  { name: "s", perUs: 1e-6, upTo: Infinity },
];

/** The smallest 1, 2 or 5 x 10^k that is at least `raw`. */
export function niceStep(raw) {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  const m = raw / power;
  const factor = m <= 1 + 1e-9 ? 1 : m <= 2 + 1e-9 ? 2 : m <= 5 + 1e-9 ? 5 : 10;
  return factor * power;
}

/** The unit whose numbers suit a tick step (a 200 ns step reads in ns, 5 ms in ms). */
export function unitFor(stepUs) {
  return UNITS.find((u) => stepUs < u.upTo) ?? UNITS[UNITS.length - 1];
}

function decimalsFor(stepInUnit) {
  return Math.max(0, Math.min(6, -Math.floor(Math.log10(stepInUnit) + 1e-9)));
}

/**
 * Ticks for the span [startUs, endUs] drawn over `widthPx`, about `spacingPx` apart:
 * {step, unit, values: [us...], label(us)}.
 */
export function ticks(startUs, endUs, widthPx, spacingPx = 100) {
  const span = Math.max(endUs - startUs, 1e-6);
  const step = niceStep((span * spacingPx) / Math.max(widthPx, 1));
  // The span's unit, not the step's: a 1.75 s view reads 19.2 s, 19.4 s, not 19200 ms. Far
  // into the trace a larger unit still, while the step needs at most 3 decimals in it (a
  // 400 ms view at 19.5 s reads 19.5 s, 19.6 s, not 19500 ms).
  let k = UNITS.indexOf(unitFor(span));
  const far = Math.max(Math.abs(startUs), Math.abs(endUs));
  while (k + 1 < UNITS.length && far * UNITS[k].perUs >= 1000 && decimalsFor(step * UNITS[k + 1].perUs) <= 3) k++;
  const unit = UNITS[k];
  const decimals = decimalsFor(step * unit.perUs);
  const values = [];
  const first = Math.ceil(startUs / step);
  for (let i = first; i * step <= endUs && values.length < 1000; i++) values.push(i * step);
  const label = (us) => `${us === 0 ? "0" : (us * unit.perUs).toFixed(decimals)} ${unit.name}`;
  return { step, unit, values, label };
}

/** A duration with 3-4 significant digits in the unit that fits it: "812 ns", "12.3 µs", "1.25 s". */
export function formatDuration(us) {
  if (!Number.isFinite(us)) return String(us);
  const magnitude = Math.abs(us);
  if (magnitude === 0) return "0 µs";
  const unit = UNITS.find((u) => magnitude < u.upTo) ?? UNITS[UNITS.length - 1];
  const value = us * unit.perUs;
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${unit.name}`;
}

/** A time on the trace (us after its start) with enough digits for the given resolution. */
export function formatTime(us, resolutionUs = Math.abs(us) / 1e4) {
  const unit = unitFor(Math.max(Math.abs(us), 1e-9) / 10);
  const decimals = decimalsFor(Math.max(resolutionUs, 1e-9) * unit.perUs);
  return `${(us * unit.perUs).toFixed(decimals)} ${unit.name}`;
}

/** Where an event starts, as the tooltip and the details both print it (the same number). */
export function formatEventTime(startUs, durUs) {
  return formatTime(startUs, Math.max(durUs / 100, 0.001));
}

/** A stat named `*_ps` (picoseconds: device_duration_ps) as a duration; other values unchanged. */
export function formatPicoseconds(value) {
  const ps = typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : value;
  return typeof ps === "number" && Number.isFinite(ps) ? formatDuration(ps / 1e6) : null;
}
