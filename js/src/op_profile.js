// Entry point of xprof_widgets/static/op_profile.js (the OpProfile widget).
export { default } from "./op_profile/index.js";
