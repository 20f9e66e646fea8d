// The PodViewer widget's front end (anywidget module): summary, the step-time heatmap (hosts or
// cores x steps, stragglers outlined), each step's breakdown on its slowest core, and the table
// of every step and core; data from xprof_widgets/widgets/pod_viewer.py.
import { PodViewerView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(PodViewerView);
