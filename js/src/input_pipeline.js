// Entry point of xprof_widgets/static/input_pipeline.js (the InputPipeline widget).
export { default } from "./input_pipeline/index.js";
