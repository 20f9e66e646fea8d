// Entry point of xprof_widgets/static/graph_viewer.js (the GraphViewer widget).
export { default } from "./graph_viewer/index.js";
