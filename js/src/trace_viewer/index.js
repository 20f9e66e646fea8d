// The TraceViewer widget's front end (anywidget module): a canvas timeline of a profile, fed in
// windows by the kernel (xprof_widgets/widgets/trace_viewer.py).
import { TraceView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(TraceView);
