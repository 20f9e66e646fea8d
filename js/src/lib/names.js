// Long names cut to fit a table cell. Plain text loses its middle (scopes before, ids after: both
// ends tell names apart). A C++ signature (a GPU kernel's demangled name) keeps its function's
// name instead: the parameter list, return type, nested and then outer template arguments and
// short namespaces go first, in that order, until it fits.

/**
 * `text` cut to `max` characters by leaving out its middle ("tf_XLAEigen/-894…633742"): names
 * differ at both ends (scopes before, ids and numbers after), so both stay.
 */
export function elideMiddle(text, max = 64) {
  const chars = [...String(text)];
  if (chars.length <= max) return String(text);
  const tail = Math.floor((max - 1) / 2);
  return `${chars.slice(0, max - 1 - tail).join("")}…${chars.slice(chars.length - tail).join("")}`;
}

const OPEN = "<([{";
const CLOSE = ">)]}";
const ANON = "(anonymous namespace)";
const HIDDEN_ANON = "\u0001"; // stands for ANON while parsing: its parentheses are no parameter list
const QUALIFIED = /^[A-Za-z_~\u0001][\w~:\u0001]*$/;
// A namespace or class qualifier this short is dropped before the function's name is cut
// (at::, native::, detail::, cutlass::); a long one names a generated type (a CUTLASS kernel's
// configuration) and stays.
const SHORT_QUALIFIER = 16;
// The function's namespaces stay only while this much of its template arguments still shows.
const MIN_TARGS = 12;

/** Whether text[i] closes a bracket ("->" is an arrow, not a closing angle bracket). */
const closes = (text, i) => CLOSE.includes(text[i]) && !(text[i] === ">" && text[i - 1] === "-");

/** Index of the bracket closing the one opened at `start`, or -1. */
function closing(text, start) {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    if (OPEN.includes(text[i])) depth++;
    else if (closes(text, i) && --depth === 0) return i;
  }
  return -1;
}

/** Index of the bracket opening the one closed at `end` (scanning back), or -1. */
function opening(text, end) {
  let depth = 0;
  for (let i = end; i >= 0; i--) {
    if (closes(text, i)) depth++;
    else if (OPEN.includes(text[i]) && --depth === 0) return i;
  }
  return -1;
}

/**
 * A demangled C++ signature split as {ret, name, targs, params, suffix} ("void ",
 * "at::native::k", "<4, F<float>>", "(int, F<float>)", " const"), or null for anything else.
 */
export function parseSignature(text) {
  const s = String(text).replaceAll(ANON, HIDDEN_ANON);
  let depth = 0;
  let paren = -1;
  for (let i = 0; i < s.length && paren < 0; i++) {
    if (s[i] === "(" && depth === 0) paren = i;
    else if (OPEN.includes(s[i])) depth++;
    else if (closes(s, i)) depth--;
  }
  if (/\s/.test(s[paren - 1] ?? "")) return null; // "Memcpy DtoH (Device -> Pinned)": words, no signature
  let head = paren < 0 ? s : s.slice(0, paren);
  let params = "";
  let suffix = "";
  if (paren >= 0) {
    const end = closing(s, paren);
    if (end < 0) return null;
    params = s.slice(paren, end + 1);
    suffix = s.slice(end + 1);
    // a qualifier (" const", " [clone .kd]") may follow; "enumerate(DataLoader)#_Iter.__next__",
    // PyTorch's name for a loader's step, is words, no signature
    if (suffix && !/^\s/.test(suffix)) return null;
  }
  head = head.trimEnd();
  let targs = "";
  if (head.endsWith(">")) {
    const start = opening(head, head.length - 1);
    if (start <= 0) return null;
    targs = head.slice(start);
    head = head.slice(0, start);
  }
  const space = head.lastIndexOf(" ");
  const ret = space < 0 ? "" : head.slice(0, space + 1);
  const name = head.slice(space + 1);
  if (!QUALIFIED.test(name) || (!targs && !params)) return null;
  const back = (part) => part.replaceAll(HIDDEN_ANON, ANON);
  return { ret: back(ret), name: back(name), targs: back(targs), params: back(params), suffix: back(suffix) };
}

/** What is nested inside the template arguments collapsed to <…>, (…) or {…}:
 * "<4, F<float>, G(int)::{lambda()#1}>" -> "<4, F<…>, G(…)::{…}>". */
function collapseNested(targs) {
  let out = "";
  let depth = 0;
  for (let i = 0; i < targs.length; i++) {
    const c = targs[i];
    if (OPEN.includes(c)) {
      depth++;
      if (depth <= 2) out += depth === 1 ? c : `${c}…`;
    } else if (closes(targs, i)) {
      if (depth <= 2) out += c;
      depth--;
    } else if (depth <= 1) out += c;
  }
  return out;
}

/** Short qualifiers dropped: "at::native::(anonymous namespace)::F" -> "F"; long ones stay. */
function dropQualifiers(text) {
  return text.replace(/(?:\(anonymous namespace\)|\b[A-Za-z_]\w*)::/g,
    (q) => (q === `${ANON}::` || q.length - 2 <= SHORT_QUALIFIER ? "" : q));
}

/** Template arguments cut at the end to `room` characters ("<float, fl…>"), or "<…>". */
function cutTargs(targs, room) {
  if (targs.length <= room) return targs;
  const keep = room - 3; // "<", "…", ">"
  return keep >= 3 ? `${[...targs].slice(0, keep + 1).join("")}…>` : "<…>";
}

/** A signature's shorter forms that do not depend on the room: parameters, return type,
 * nested template arguments and then the template arguments' short namespaces left out. */
function fixedForms(sig) {
  const params = sig.params.length > 2 ? "(…)" : sig.params;
  const nested = collapseNested(sig.targs.replaceAll(`${ANON}::`, ""));
  const targs = dropQualifiers(nested);
  const forms = [
    `${sig.ret}${sig.name}${sig.targs}${params}${sig.suffix}`,
    `${sig.name}${sig.targs}${params}`,
    `${sig.name}${nested}${params}`,
    `${sig.name}${targs}${params}`,
  ];
  return { params, targs, forms };
}

/**
 * A signature's shorter forms, longest first, each keeping the function's name, the last its
 * name alone ("vectorized_elementwise_kernel<…>(…)"); null for text that is no signature. For
 * a canvas label: the first form that fits its width is drawn.
 */
export function signatureForms(text) {
  const sig = parseSignature(text);
  if (!sig) return null;
  const { params, forms } = fixedForms(sig);
  const targs = sig.targs ? "<…>" : "";
  return [...forms, `${sig.name}${targs}${params}`, `${dropQualifiers(sig.name)}${targs}${params}`];
}

/**
 * `text` within `max` characters, a signature's function name kept whole where it fits:
 * "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(int, ...)"
 * -> "vectorized_elementwise_kernel<4, CUDAFunctor_add<…>, Ar…>(…)". Not a signature: elideMiddle.
 */
export function elideName(text, max = 64) {
  const full = String(text);
  if ([...full].length <= max) return full;
  const sig = parseSignature(full);
  if (!sig) return elideMiddle(full, max);
  const { params, targs, forms } = fixedForms(sig);
  const tries = [...forms];
  for (const [name, least] of [[sig.name, MIN_TARGS], [dropQualifiers(sig.name), 3]]) {
    const room = max - [...name].length - params.length;
    if (!sig.targs) tries.push(`${name}${params}`);
    else if (room >= least) tries.push(`${name}${cutTargs(targs, room)}${params}`);
  }
  return tries.find((s) => [...s].length <= max) ?? elideMiddle(dropQualifiers(sig.name), max);
}
