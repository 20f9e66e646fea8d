// The comparison's front end (anywidget module): the summary in words, then steps, ops and
// memory of two runs in tabs; data from xprof_widgets/widgets/compare.py, asked for after render.
// The two aligned Trace Viewers under it are TraceViewer widgets of their own.
import { CompareView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(CompareView);
