// Entry point of xprof_widgets/static/kernel_stats.js (the KernelStats widget).
export { default } from "./kernel_stats/index.js";
