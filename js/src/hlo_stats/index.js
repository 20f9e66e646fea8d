// The HloStats widget's front end: summary, a pie of self time by category and the HLO op
// table; data from xprof_widgets/widgets/hlo_stats.py.
import { HloStatsView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new HloStatsView(model, el);
    return () => view.dispose();
  },
};
