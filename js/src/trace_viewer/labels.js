// Track and section labels that fit the label column: long numeric ids shortened, and what is
// still too long cut in the middle, so both the distinctive start and the end (a thread id's
// tail, a "· rank 1" or host suffix) stay in sight. The full name is on hover.

const LONG_DIGITS = /\d{12,}/g;
const KEEP_DIGITS = 4;

/** A label with each run of 12 or more digits cut to its first and last digits: -8948…6372. */
export function shortenIds(text) {
  return text.replace(LONG_DIGITS, (run) => `${run.slice(0, KEEP_DIGITS)}…${run.slice(-KEEP_DIGITS)}`);
}

/**
 * `text` cut in the middle to fit `room` pixels as `measure(string)` reads widths: the start
 * keeps a little more than the end. Returns the text itself when it fits, null when not even
 * one character each side fits.
 */
export function elideMiddle(text, room, measure) {
  if (measure(text) <= room) return text;
  let lo = 1;
  let hi = text.length - 1;
  let best = null;
  while (lo <= hi) {
    const keep = (lo + hi) >> 1;
    const head = Math.ceil(keep * 0.55);
    const candidate = `${text.slice(0, head)}…${text.slice(text.length - (keep - head))}`;
    if (measure(candidate) <= room) {
      best = candidate;
      lo = keep + 1;
    } else {
      hi = keep - 1;
    }
  }
  return best && best.length > 2 ? best : null;
}

/** A label as the column draws it: ids shortened, then cut in the middle to `room` pixels. */
export function fitLabel(text, room, measure) {
  return elideMiddle(shortenIds(text), room, measure);
}
