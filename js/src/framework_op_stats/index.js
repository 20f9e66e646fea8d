// The FrameworkOpStats widget's front end: summary, include-idle toggle, self-time pies and the
// framework op table; data from xprof_widgets/widgets/framework_op_stats.py.
import { FrameworkOpStatsView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(FrameworkOpStatsView);
