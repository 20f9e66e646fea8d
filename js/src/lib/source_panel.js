// The source panel of the Graph Viewer's card and the Trace Viewer's details: an op's source
// stack, innermost frame first, one row per frame (`function  file:line`); under it the lines
// around the chosen frame (the first at first), its own line marked, or why they cannot be
// shown (the chosen row names the file). The kernel reads the file the profile names; the panel only says which frame.
import { h } from "./dom.js";

const CSS = `
.xw-src { margin: 4px 0; font-size: 11px; }
.xw-src-frames { list-style: none; margin: 0 0 4px; padding: 0; max-height: 6.5em; overflow: auto; }
.xw-src .xw-src-frame { display: block; width: 100%; text-align: left; font: inherit; font-size: 11px; margin: 0;
  padding: 1px 4px; border: 0; background: none; color: var(--xw-fg); cursor: pointer; overflow-wrap: anywhere; }
.xw-src .xw-src-frame:hover { background: var(--xw-panel2); }
.xw-src .xw-src-frame[data-chosen="1"] { background: var(--xw-panel2); font-weight: 600; }
.xw-src-fn { font-family: var(--xw-mono); }
.xw-src-loc { color: var(--xw-fg2); margin-left: 1em; }
.xw-src-code { font-family: var(--xw-mono); font-size: 11px; margin: 0; padding: 2px 4px; overflow-x: auto;
  border: 1px solid var(--xw-border1); }
.xw-src-code div { white-space: pre; }
.xw-src-code .xw-src-here { background: var(--xw-panel2); font-weight: 600; }
.xw-src-missing { color: var(--xw-fg2); overflow-wrap: anywhere; }
`;

/** The panel for one op. `fetchFrame(k)` resolves to the `source` answer for frame k
 * ({content: {frames, frame, file, line, first, lines | missing}}), or null when superseded;
 * `onChange` runs after each redraw (a card re-places itself). */
export function sourcePanel(fetchFrame, { onChange = null } = {}) {
  const frames = h("ol", { className: "xw-src-frames" });
  const lines = h("div", { className: "xw-src-lines" }, h("span", { className: "xw-src-missing" }, "loading source…"));
  const panel = h("div", { className: "xw-src" }, h("style", {}, CSS), frames, lines);
  const show = async (k) => {
    let answer;
    try {
      answer = await fetchFrame(k);
    } catch (error) {
      lines.replaceChildren(missing(`source: ${error.message ?? error}`));
      return;
    }
    if (!answer) return;
    const c = answer.content;
    frames.replaceChildren(...(c.frames ?? []).map((f, i) => h("li", {}, frameRow(f, i === c.frame, () => show(i)))));
    lines.replaceChildren(c.missing ? missing(c.missing) : code(c.first, c.lines, c.line));
    onChange?.();
  };
  show(0);
  return panel;
}

function frameRow(f, chosen, onclick) {
  const where = `${f.file}:${f.line}`;
  return h("button", { type: "button", className: "xw-src-frame", title: f.column > 0 ? `${where}:${f.column}` : where,
    dataset: { chosen: chosen ? "1" : "0" }, onclick },
  h("span", { className: "xw-src-fn" }, f.function || "(function not recorded)"),
  h("span", { className: "xw-src-loc" }, where));
}

function missing(text) {
  return h("span", { className: "xw-src-missing" }, text);
}

/** Numbered lines from `first`, the frame's own line marked. */
function code(first, lines, line) {
  const width = String(first + lines.length).length;
  return h("pre", { className: "xw-src-code" }, lines.map((text, i) => {
    const n = first + i;
    return h("div", { className: n === line ? "xw-src-here" : "" }, `${String(n).padStart(width)}  ${text}`);
  }));
}
