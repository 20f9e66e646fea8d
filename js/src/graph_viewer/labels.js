// A node's label and the box around it: what the layout sizes (in the worker) and the view draws
// (on the page), kept apart from layout.js so the page's bundle holds no dagre.
const CHAR_W = 6.4; // px per character of the 11px label font, a little generous
export const LINE_H = 14;
const PAD = 8;
const SHAPE_CHARS = 44; // a tuple's shape can be thousands of characters: labels cut it

/** Text lines of a node's label: name, opcode, shape, and with metadata op name and source. */
export function labelLines(node, showMetadata) {
  const lines = [node.name, node.opcode, cut(node.shape, SHAPE_CHARS)];
  if (showMetadata) {
    if (node.op_name) lines.push(cut(node.op_name, SHAPE_CHARS));
    if (node.source) lines.push(cut(node.source, SHAPE_CHARS));
  }
  return lines;
}

export function cut(text, n) {
  const s = String(text ?? "");
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** A node's label lines and its box's size around them. */
export function boxOf(node, showMetadata) {
  const lines = labelLines(node, showMetadata);
  return { lines, width: Math.max(...lines.map((t) => t.length)) * CHAR_W + 2 * PAD, height: lines.length * LINE_H + PAD };
}
