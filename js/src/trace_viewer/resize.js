// The timeline's height, set by dragging the handle under it (or its arrow keys; a double-click
// fits every row). The height is the widget's `height` trait: it reaches the kernel when the drag
// ends, so every display of the widget, and one made again later, keeps it while the kernel
// lives. Methods of TraceView.
import { h } from "../lib/dom.js";
import { AXIS_H } from "./layout.js";

export const MIN_STAGE_H = 150;
export const MAX_STAGE_H = 5000;
export const KEY_STEP_H = 40;

/** The height a drag of `dy` px from `start` asks for: within [MIN_STAGE_H, the rows' own
 * height] (past the last row there is nothing to show), at most MAX_STAGE_H. */
export function draggedHeight(start, dy, contentHeight) {
  const most = Math.min(MAX_STAGE_H, Math.max(MIN_STAGE_H, Math.ceil(contentHeight)));
  return Math.round(Math.max(MIN_STAGE_H, Math.min(most, start + dy)));
}

export const resizeMethods = {
  buildResizer() {
    this.resizer = h("div", {
      className: "xw-tv-resize", role: "separator", tabIndex: 0, "aria-orientation": "horizontal",
      "aria-label": "timeline height",
      title: "Drag to change the timeline's height (↑ ↓ keys too); double-click fits every row",
      onpointerdown: (e) => this.resizeStart(e),
      onpointermove: (e) => this.resizeMove(e),
      onpointerup: (e) => this.resizeEnd(e),
      onpointercancel: (e) => this.resizeEnd(e),
      ondblclick: () => this.setHeight(MAX_STAGE_H, true),
    });
    return this.resizer;
  },

  /** The rows' whole height, the time axis included. */
  contentHeight() {
    return AXIS_H + this.layout.height + 1;
  },

  /** Ask for a timeline `px` high (the model's `height`); `save` sends it to the kernel. */
  setHeight(px, save) {
    const height = draggedHeight(px, 0, this.contentHeight());
    if (height !== this.model.get("height")) this.model.set("height", height);
    if (save) this.model.save_changes();
  },

  resizeStart(e) {
    if (e.button !== 0) return;
    e.preventDefault();
    this.resizer.setPointerCapture?.(e.pointerId);
    this.resizing = { y: e.clientY, start: this.height };
  },

  resizeMove(e) {
    if (!this.resizing) return;
    const { y, start } = this.resizing;
    this.setHeight(draggedHeight(start, e.clientY - y, this.contentHeight()), false);
  },

  resizeEnd(e) {
    if (!this.resizing) return;
    this.resizer.releasePointerCapture?.(e.pointerId);
    this.resizing = null;
    this.setHeight(this.height, true);
  },

  /** ↑ / ↓ on the focused handle: 40 px shorter / taller. */
  resizeKey(e) {
    const step = { ArrowUp: -KEY_STEP_H, ArrowDown: KEY_STEP_H }[e.key];
    if (!step) return;
    e.preventDefault();
    this.setHeight(this.height + step, true);
  },
};
