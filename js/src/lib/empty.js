// The one way a tool says it has nothing to show for a profile: a title, what it read, and what
// to do with the framework that made the profile (the kernel's advice). Neutral, not an error:
// a failure keeps the red of --xw-error. Every view that can come up empty uses it.
import { h } from "./dom.js";

/** The stylesheet (needs THEME's variables on an enclosing element). */
export const EMPTY_CSS = `
.xw-empty { margin: 12px; padding: 10px 12px; border-left: 3px solid var(--xw-border1); background: var(--xw-panel);
  color: var(--xw-fg); line-height: 18px; max-width: 120ch; white-space: pre-wrap; overflow-wrap: anywhere; }
.xw-empty-title { display: block; font-weight: 600; margin-bottom: 2px; }
.xw-empty-advice { display: block; margin-top: 6px; color: var(--xw-fg2); }`;

/** The empty state: `title` ("No op profile"), `text` (what was read), `advice` (optional). */
export function emptyState(title, text, advice = "", className = "") {
  return h("div", { className: `xw-empty ${className}`.trim(), role: "note" },
    h("span", { className: "xw-empty-title" }, title), text,
    advice ? h("span", { className: "xw-empty-advice" }, advice) : null);
}
