// The MemoryProfile widget's front end (anywidget module): host and allocator pickers, the
// allocator's summary, its memory timeline with a card for the hovered snapshot, and the
// allocations live at the peak; data from xprof_widgets/widgets/memory_profile.py.
import { MemoryProfileView } from "./view.js";
import { noted } from "../lib/notes.js";

export default noted(MemoryProfileView);
