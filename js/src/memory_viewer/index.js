// The MemoryViewer widget's front end (anywidget module): module and memory-space pickers, the
// peak summary, memory over program order and the buffers live at the peak, with a card for the
// hovered buffer; data from xprof_widgets/widgets/memory_viewer.py.
import { MemoryViewerView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(MemoryViewerView);
