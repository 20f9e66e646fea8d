// Numbers as the widget prints them; a missing value (null) is an em dash.
const DASH = "—";

export function ms(value) {
  return value === null || value === undefined ? DASH : value.toFixed(3);
}

export function pct(value, digits = 1) {
  return value === null || value === undefined ? DASH : `${value.toFixed(digits)}%`;
}

export function count(value) {
  return value === null || value === undefined ? DASH : value.toLocaleString("en");
}
