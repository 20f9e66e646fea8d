// Entry point of xprof_widgets/static/roofline_model.js (the RooflineModel widget).
export { default } from "./roofline_model/index.js";
