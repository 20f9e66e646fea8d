// The HloStats widget's front end: summary, a pie of self time by category and the HLO op
// table; data from xprof_widgets/widgets/hlo_stats.py.
import { HloStatsView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(HloStatsView);
