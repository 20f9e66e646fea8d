// The comparison's front end (anywidget module): the summary in words, then steps, ops and
// memory of two runs in tabs; data from xprof_widgets/widgets/compare.py, asked for after render.
// The two aligned Trace Viewers under it are TraceViewer widgets of their own.
import { CompareView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new CompareView(model, el);
    return () => view.dispose();
  },
};
