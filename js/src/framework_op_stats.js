// Entry point of xprof_widgets/static/framework_op_stats.js (the FrameworkOpStats widget).
export { default } from "./framework_op_stats/index.js";
