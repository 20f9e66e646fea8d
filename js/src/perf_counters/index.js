// The PerfCounters widget's front end: summary, the non-zero toggle and the counter table; data
// from xprof_widgets/widgets/perf_counters.py.
import { PerfCountersView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(PerfCountersView);
