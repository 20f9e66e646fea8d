// The PerfCounters widget's front end: summary, the non-zero toggle and the counter table; data
// from xprof_widgets/widgets/perf_counters.py.
import { PerfCountersView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new PerfCountersView(model, el);
    return () => view.dispose();
  },
};
