// Keys typed inside a widget are the widget's. Notebook hosts bind single keys in command mode
// (A and B insert cells, D D deletes one, X cuts, M and Y change its type, Enter edits, Shift+Enter
// runs), and Notebook 7 listens for them on `document` in the capture phase: before any listener
// inside the widget runs, so stopping a key there is too late. A capture listener on `window` runs
// before every other listener on the page, whatever the host.

const KEY_EVENTS = ["keydown", "keypress", "keyup"];
const CAPTURE = { capture: true };

/** Ctrl/⌘+S still saves the notebook; its keyup is the widget's, so a held S is let go. */
function passesToHost(e) {
  return e.type === "keydown" && (e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "s";
}

/**
 * Keeps every key event whose target is inside `el` from the rest of the page (stopPropagation at
 * window, capture phase) and hands it to `handle(event, target)` instead, `target` being the
 * element inside `el` (inside a shadow root too) that has focus. Default actions still happen
 * (typing into an input, Tab moving focus, Enter on a button); `handle` calls preventDefault for the
 * keys it acts on. Returns the function that removes the listeners.
 */
export function ownKeys(el, handle) {
  const listener = (e) => {
    const path = e.composedPath();
    if (!path.includes(el) || passesToHost(e)) return;
    e.stopPropagation();
    handle(e, path[0]);
  };
  for (const type of KEY_EVENTS) window.addEventListener(type, listener, CAPTURE);
  return () => {
    for (const type of KEY_EVENTS) window.removeEventListener(type, listener, CAPTURE);
  };
}

const KEYLESS_INPUTS = new Set(["checkbox", "radio", "button", "submit", "reset", "range", "color"]);

/** Whether `node` takes typed keys itself (a text box, a select), so they are not shortcuts. */
export function isTextField(node) {
  if (!(node instanceof HTMLElement)) return false;
  if (node.tagName === "INPUT") return !KEYLESS_INPUTS.has(node.type);
  return node.tagName === "TEXTAREA" || node.tagName === "SELECT" || node.isContentEditable;
}
