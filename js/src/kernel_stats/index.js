// The KernelStats widget's front end: summary, a pie of the kernels with the most time and the
// kernel table; data from xprof_widgets/widgets/kernel_stats.py.
import { KernelStatsView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(KernelStatsView);
