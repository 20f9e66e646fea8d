// The FrameworkOpStats widget's front end: summary, include-idle toggle, self-time pies and the
// framework op table; data from xprof_widgets/widgets/framework_op_stats.py.
import { FrameworkOpStatsView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new FrameworkOpStatsView(model, el);
    return () => view.dispose();
  },
};
