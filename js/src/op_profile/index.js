// The OpProfile widget's front end (anywidget module): overview, controls, the grouped op table
// with a detail card, and the roofline chart; data from xprof_widgets/widgets/op_profile.py.
import { OpProfileView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new OpProfileView(model, el);
    return () => view.dispose();
  },
};
