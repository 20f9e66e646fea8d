// The RooflineModel widget's front end: ceilings, controls (infeed/outfeed, step, memory), the
// roofline chart, the program rows and the op table; data from xprof_widgets/widgets/hlo_stats.py.
import { RooflineView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(RooflineView);
