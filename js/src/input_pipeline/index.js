// The InputPipeline widget's front end (anywidget module): a summary, the device side (step-time
// statistics and charts) and the host side (input time by category, the input-op table); data
// from xprof_widgets/widgets/input_pipeline.py, asked for once after render.
import { InputPipelineView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(InputPipelineView);
