// Entry point of xprof_widgets/static/perf_counters.js (the PerfCounters widget).
export { default } from "./perf_counters/index.js";
