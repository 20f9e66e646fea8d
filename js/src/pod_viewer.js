// Entry point of xprof_widgets/static/pod_viewer.js (the PodViewer widget).
export { default } from "./pod_viewer/index.js";
