// Links between tools. Inside the Profiler suite (the kernel sets `_linked`), a view can ask
// for an op to be shown in another tool by setting its `link` trait; the suite routes it.
import { h } from "./dom.js";

/** A button that shows `op` in `tool` ("trace" or "op"); null outside the suite or without op. */
export function linkButton(model, tool, op, label) {
  if (!model.get("_linked") || !op) return null;
  return h("button", {
    className: "xw-link",
    type: "button",
    title: `${label}: ${op}`,
    onclick: () => {
      model.set("link", { tool, op, at: Date.now() }); // `at`: a second click is a new change
      model.save_changes();
    },
  }, label);
}
