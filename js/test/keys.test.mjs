// lib/keys.js: key events inside a widget stop at window, before any host's listener.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ownKeys } from "../src/lib/keys.js";

// A key event as the browser hands it to window's capture listeners: its path runs from the
// focused node up to window.
function keyEvent(type, key, path, modifiers = {}) {
  const event = new Event(type, { bubbles: true, cancelable: true });
  Object.assign(event, { key, ctrlKey: false, metaKey: false, ...modifiers });
  event.composedPath = () => path;
  event.stopped = false;
  event.stopPropagation = () => { event.stopped = true; };
  return event;
}

test("keys inside the widget stop at window and go to it; others pass; Ctrl/⌘+S saves", () => {
  const saved = globalThis.window;
  globalThis.window = new EventTarget();
  try {
    const el = { name: "widget" };
    const stage = { name: "stage" };
    const cell = { name: "cell" };
    const handled = [];
    const dispose = ownKeys(el, (e, target) => handled.push([e.type, e.key, target]));
    const inside = [stage, el, cell];

    for (const type of ["keydown", "keypress", "keyup"]) {
      const e = keyEvent(type, "d", inside);
      window.dispatchEvent(e);
      assert.equal(e.stopped, true, type);
    }
    assert.deepEqual(handled, [["keydown", "d", stage], ["keypress", "d", stage], ["keyup", "d", stage]]);

    const enter = keyEvent("keydown", "Enter", inside, { shiftKey: true });
    window.dispatchEvent(enter);
    assert.equal(enter.stopped, true);

    const outside = keyEvent("keydown", "a", [cell]);
    window.dispatchEvent(outside);
    assert.equal(outside.stopped, false);

    for (const modifiers of [{ ctrlKey: true }, { metaKey: true }]) {
      const save = keyEvent("keydown", "s", inside, modifiers);
      window.dispatchEvent(save);
      assert.equal(save.stopped, false);
    }
    const letGo = keyEvent("keyup", "s", inside, { ctrlKey: true }); // S held, then Ctrl: still let go
    window.dispatchEvent(letGo);
    assert.equal(letGo.stopped, true);
    const cut = keyEvent("keydown", "x", inside, { ctrlKey: true });
    window.dispatchEvent(cut);
    assert.equal(cut.stopped, true);
    assert.equal(handled.length, 6);

    dispose();
    const after = keyEvent("keydown", "d", inside);
    window.dispatchEvent(after);
    assert.equal(after.stopped, false);
    assert.equal(handled.length, 6);
  } finally {
    globalThis.window = saved;
  }
});
