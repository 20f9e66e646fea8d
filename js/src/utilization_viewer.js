// Entry point of xprof_widgets/static/utilization_viewer.js (the UtilizationViewer widget).
export { default } from "./utilization_viewer/index.js";
