// Entry point of xprof_widgets/static/trace_viewer.js (the TraceViewer widget).
export { default } from "./trace_viewer/index.js";
