// The GraphViewer widget's front end (anywidget module): the HLO graph around an op, laid out
// with dagre and drawn as SVG; data from xprof_widgets/widgets/graph_viewer.py.
import { noted } from "../lib/notes.js";
import { GraphView } from "./view.js";

export default noted(GraphView);
