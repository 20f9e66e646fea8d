// Entry point of xprof_widgets/static/hlo_stats.js (the HloStats widget).
export { default } from "./hlo_stats/index.js";
