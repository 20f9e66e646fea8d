// The UtilizationViewer widget's front end: summary, the per-unit chart and the table; data from
// xprof_widgets/widgets/utilization_viewer.py.
import { UtilizationView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(UtilizationView);
