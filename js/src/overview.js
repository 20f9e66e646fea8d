// Entry point of xprof_widgets/static/overview.js (the suite's Overview tab).
export { default } from "./overview/view.js";
