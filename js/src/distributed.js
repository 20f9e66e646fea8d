// Entry point of xprof_widgets/static/distributed.js (the DistributedView widget).
export { default } from "./distributed/index.js";
