// Entry point of xprof_widgets/static/memory_profile.js (the MemoryProfile widget).
export { default } from "./memory_profile/index.js";
