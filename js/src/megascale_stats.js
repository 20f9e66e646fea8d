// Entry point of xprof_widgets/static/megascale_stats.js (the MegascaleStats widget).
export { default } from "./megascale_stats/index.js";
