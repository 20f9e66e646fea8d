// Entry point of xprof_widgets/static/memory_viewer.js (the MemoryViewer widget).
export { default } from "./memory_viewer/index.js";
