// The DistributedView widget's front end (anywidget module): summary, each rank's GPU time as
// stacked bars, the waiting each rank caused, and the tables of collectives by kind, collectives
// matched across ranks and stragglers; data from xprof_widgets/widgets/distributed.py.
import { DistributedView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(DistributedView);
