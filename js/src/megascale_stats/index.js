// The MegascaleStats widget's front end: summary, the stall chart and the collectives table; data
// from xprof_widgets/widgets/megascale_stats.py.
import { MegascaleView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(MegascaleView);
