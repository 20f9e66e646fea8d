// The OpProfile widget's front end (anywidget module): overview, controls, the grouped op table
// with a detail card, and the roofline chart; data from xprof_widgets/widgets/op_profile.py.
import { OpProfileView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(OpProfileView);
