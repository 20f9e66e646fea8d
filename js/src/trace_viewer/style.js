// The widget's stylesheet, scoped under .xw-trace-viewer, themed by JupyterLab's CSS variables
// (with fallbacks for other front ends).
import { LINK_CSS, THEME } from "../lib/theme.js";

export const CSS = `
.xw-trace-viewer {
  ${THEME}
  border: 1px solid var(--xw-border); border-radius: 3px; width: 100%; box-sizing: border-box;
  position: relative; container-type: inline-size;
}
/* The viewer's width is its cell's, never its content's (the narrow toolbar below needs a
   width to query): in a row of widgets (an ipywidgets Box) the front end's wrapper around it
   is as wide as the row allows. */
:has(> .xw-trace-viewer) { min-width: 0; width: 100%; }
.xw-trace-viewer * { box-sizing: border-box; }
.xw-tv-toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; padding: 5px 6px;
  border-bottom: 1px solid var(--xw-border); background: var(--xw-panel); }
/* The text boxes break lines at their least width and grow to their own where there is room,
   so a cell of about 800 px keeps the toolbar on one row. */
.xw-tv-toolbar > input { flex: 1 1 96px; min-width: 96px; max-width: 150px; }
.xw-tv-toolbar > .xw-tv-filter { max-width: 120px; }
/* Narrow: one row that scrolls sideways instead of rows pushing the timeline down; the search
   box, its buttons and its hit count come right after the tools, so they stay in sight, and the
   track filter, flow switch and help follow them. */
@container (max-width: 720px) {
  .xw-tv-toolbar { flex-wrap: nowrap; overflow-x: auto; scrollbar-width: thin; white-space: nowrap;
    gap: 4px; padding: 5px 4px; }
  .xw-tv-toolbar > * { flex: none; order: 2; }
  .xw-tv-toolbar > .xw-tv-group { order: 0; }
  .xw-trace-viewer .xw-tv-group button { padding: 2px 5px; }
  .xw-tv-toolbar > .xw-tv-search { min-width: 128px; } /* its placeholder whole */
  .xw-tv-toolbar > .xw-tv-search, .xw-tv-search + button, .xw-tv-search + button + button,
  .xw-tv-toolbar > .xw-tv-hits, .xw-tv-toolbar > .xw-tv-split, .xw-tv-toolbar > .xw-tv-match { order: 1; }
}
.xw-tv-group { display: inline-flex; border: 1px solid var(--xw-border1); border-radius: 3px; overflow: hidden; }
.xw-tv-group button { border: 0; border-right: 1px solid var(--xw-border); border-radius: 0; }
.xw-tv-group button:last-child { border-right: 0; }
.xw-trace-viewer button { font: inherit; color: var(--xw-fg); background: var(--xw-bg); cursor: pointer;
  padding: 2px 8px; border: 1px solid var(--xw-border1); border-radius: 3px; line-height: 18px; }
.xw-trace-viewer button:hover { background: var(--xw-panel2); }
.xw-trace-viewer button[aria-pressed="true"] { background: var(--xw-accent); color: #fff; }
.xw-trace-viewer input[type="search"], .xw-trace-viewer input[type="text"] { font: inherit; color: var(--xw-fg);
  background: var(--xw-bg); border: 1px solid var(--xw-border1); border-radius: 3px; padding: 2px 6px;
  height: 24px; width: 150px; }
.xw-trace-viewer .xw-tv-filter { width: 120px; }
.xw-trace-viewer input:focus { outline: 1px solid var(--xw-accent); border-color: var(--xw-accent); }
.xw-tv-check { display: inline-flex; align-items: center; gap: 4px; cursor: pointer; user-select: none; }
.xw-tv-overlays { display: inline-flex; gap: 8px; }
.xw-tv-overlays:empty { display: none; }
.xw-tv-swatch { display: inline-block; width: 10px; height: 3px; border-radius: 1px; }
.xw-tv-hits { color: var(--xw-fg2); min-width: 56px; }
/* The host list hangs below its summary but is placed against the viewer, so the toolbar's
   sideways scroll does not clip it. */
.xw-tv-hosts { position: static; }
.xw-tv-hosts summary { cursor: pointer; user-select: none; padding: 2px 6px; border: 1px solid var(--xw-border1); border-radius: 3px; }
.xw-tv-host-list { position: absolute; z-index: 3; margin-top: 4px; max-height: 300px; overflow-y: auto; min-width: 220px;
  display: flex; flex-direction: column; gap: 2px; padding: 6px; background: var(--xw-bg); border: 1px solid var(--xw-border1);
  border-radius: 3px; box-shadow: 0 2px 6px rgba(0,0,0,.2); }
/* The handle under the timeline that sets its height (resize.js). */
.xw-tv-resize { height: 7px; cursor: ns-resize; touch-action: none; background: var(--xw-panel);
  border-top: 1px solid var(--xw-border); position: relative; }
.xw-tv-resize::after { content: ""; position: absolute; left: calc(50% - 16px); top: 2px; width: 32px; height: 2px;
  border-top: 1px solid var(--xw-fg2); border-bottom: 1px solid var(--xw-fg2); opacity: .6; }
.xw-tv-resize:hover, .xw-tv-resize:focus-visible { background: var(--xw-border1); outline: none; }
.xw-tv-footer { display: flex; justify-content: flex-end; padding: 1px 8px; font-size: 11px; line-height: 16px;
  color: var(--xw-fg2); border-top: 1px solid var(--xw-border); background: var(--xw-panel); min-height: 18px; }
.xw-tv-status { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.xw-tv-stage { position: relative; outline: none; overflow: hidden; touch-action: none; }
.xw-tv-stage:focus-visible { box-shadow: inset 0 0 0 1px var(--xw-accent); }
.xw-tv-stage canvas { display: block; width: 100%; }
.xw-tv-stage[data-tool="pan"] canvas { cursor: grab; }
.xw-tv-stage[data-tool="zoom"] canvas, .xw-tv-stage[data-tool="timing"] canvas { cursor: crosshair; }
.xw-tv-stage.xw-tv-resizing canvas { cursor: col-resize; }
.xw-tv-match { font: inherit; color: var(--xw-fg); background: var(--xw-bg); border: 1px solid var(--xw-border1); border-radius: 3px; }
.xw-tv-split { color: var(--xw-fg2); }
.xw-tv-banner { position: absolute; top: 38px; left: 50%; transform: translateX(-50%); padding: 4px 12px;
  border-radius: 12px; background: var(--xw-panel2); border: 1px solid var(--xw-border1); color: var(--xw-fg);
  box-shadow: 0 1px 4px rgba(0,0,0,.2); pointer-events: none; white-space: nowrap; }
.xw-tv-banner[data-kind="error"] { color: #fff; background: var(--xw-error); border-color: var(--xw-error);
  white-space: normal; max-width: 80%; pointer-events: auto; }
.xw-tv-tip { position: absolute; pointer-events: none; z-index: 2; max-width: 460px; padding: 5px 8px;
  background: var(--xw-panel); color: var(--xw-fg); border: 1px solid var(--xw-border1); border-radius: 3px;
  box-shadow: 0 2px 8px rgba(0,0,0,.25); font-size: 12px; line-height: 16px; overflow-wrap: anywhere; }
.xw-tv-tip-name { font-weight: 600; }
.xw-tv-dim { color: var(--xw-fg2); }
.xw-tv-help { position: absolute; z-index: 3; top: 40px; left: 50%; transform: translateX(-50%);
  background: var(--xw-panel); border: 1px solid var(--xw-border1); border-radius: 4px; padding: 8px 12px;
  box-shadow: 0 4px 16px rgba(0,0,0,.3); max-height: calc(100% - 50px); overflow: auto; }
.xw-tv-help-title { font-weight: 600; font-size: 13px; display: flex; justify-content: space-between;
  align-items: center; margin-bottom: 4px; }
.xw-tv-help td { padding: 2px 10px 2px 0; vertical-align: top; }
.xw-tv-key { font-family: var(--jp-code-font-family, monospace); white-space: nowrap; font-weight: 600; }
.xw-trace-viewer .xw-tv-close { border: 0; padding: 0 6px; font-size: 16px; }
.xw-tv-details { border-top: 1px solid var(--xw-border1); max-height: 280px; overflow: auto; padding: 6px 10px;
  background: var(--xw-bg); }
.xw-tv-empty { color: var(--xw-fg2); }
.xw-tv-title { font-weight: 600; font-size: 13px; margin-bottom: 4px; overflow-wrap: anywhere; }
.xw-tv-subtitle { font-weight: 600; margin: 6px 0 2px; color: var(--xw-fg2); }
.xw-tv-hlo { font-family: var(--jp-code-font-family, monospace); font-size: 11px; white-space: pre-wrap;
  overflow-wrap: anywhere; max-height: 110px; overflow: auto; margin: 0 0 6px; padding: 4px 6px;
  background: var(--xw-panel2); border-radius: 3px; }
.xw-tv-kv { border-collapse: collapse; }
.xw-tv-kv th { text-align: left; font-weight: normal; color: var(--xw-fg2); padding: 1px 12px 1px 0;
  vertical-align: top; white-space: nowrap; }
.xw-tv-kv td { padding: 1px 0; overflow-wrap: anywhere; }
.xw-tv-agg { border-collapse: collapse; width: 100%; }
.xw-tv-agg th { position: sticky; top: -6px; background: var(--xw-panel); text-align: right; padding: 2px 8px;
  border-bottom: 1px solid var(--xw-border1); }
.xw-tv-agg td { text-align: right; padding: 1px 8px; font-variant-numeric: tabular-nums; }
.xw-tv-agg th:first-child, .xw-tv-agg td:first-child { text-align: left; }
.xw-tv-agg tbody tr:nth-child(even) { background: var(--xw-panel2); }
.xw-tv-name { overflow-wrap: anywhere; }
.xw-tv-pivot-label { float: right; font-weight: normal; color: var(--xw-fg2); }
.xw-trace-viewer .xw-tv-pivot-label select { font: inherit; color: var(--xw-fg); background: var(--xw-bg);
  border: 1px solid var(--xw-border1); border-radius: 3px; height: 22px; }
.xw-tv-pivot tr[data-kind="section"] td { font-weight: 600; }
.xw-tv-group-label { overflow-wrap: anywhere; }
.xw-trace-viewer .xw-tv-toggle { border: 0; background: none; padding: 0 4px 0 0; line-height: 14px;
  color: var(--xw-fg2); }
.xw-tv-flows { margin: 0; padding-left: 16px; }
.xw-trace-viewer .xw-tv-link { border: 0; padding: 0; background: none; color: var(--xw-accent);
  text-decoration: underline; }
${LINK_CSS}
`;
