// What was left out of the profile (its `warnings`: a derived row family, a plane or a tool
// that failed, events a damaged file lost) as a strip under every view, so a profile that opened
// with holes says so where the user looks. Notes are text from files: text nodes only.
import { h } from "./dom.js";
import { whileKernelLives } from "./kernel_life.js";
import { THEME } from "./theme.js";

const CSS = `
.xw-notes { ${THEME} margin-top: 4px; padding: 3px 8px; border-left: 3px solid var(--xw-warn);
  background: var(--xw-panel); color: var(--xw-fg2); font-size: 11px; }
.xw-notes summary { cursor: pointer; color: var(--xw-fg); }
.xw-notes div { margin: 2px 0 0 12px; overflow-wrap: anywhere; }`;
const SHOWN = 3; // notes listed before the rest fold under "more"

/** Renders a view into `el` above a strip of the model's `_notes`; returns the view's body. */
export function withNotes(model, el) {
  const body = h("div");
  const strip = h("div", { className: "xw-notes", role: "status" });
  el.replaceChildren(h("style", {}, CSS), body, strip);
  const draw = () => {
    const notes = model.get("_notes") ?? [];
    strip.hidden = notes.length === 0;
    const lines = notes.map((note) => h("div", {}, note));
    const head = notes.length === 1 ? "1 note on this profile" : `${notes.length} notes on this profile`;
    strip.replaceChildren(h("details", { open: notes.length <= SHOWN },
      h("summary", {}, `⚠ ${head}: parts were left out, the rest is complete`), ...lines));
  };
  draw();
  model.on("change:_notes", draw);
  return { body, dispose: () => model.off("change:_notes", draw) };
}

/**
 * An anywidget module whose view (a class taking (model, el)) gets the notes strip, and gives way
 * to a plain message once its kernel is gone (see kernel_life.js).
 */
export function noted(View) {
  return {
    render({ model, el }) {
      return whileKernelLives(model, el, () => {
        const notes = withNotes(model, el);
        const view = new View(model, notes.body);
        return () => { view.dispose(); notes.dispose(); };
      });
    },
  };
}
