// Entry point of xprof_widgets/static/compare.js (the view of xw.compare's report).
export { default } from "./compare/index.js";
