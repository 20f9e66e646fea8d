// The widget's stylesheet, scoped under .xw-op-profile, themed by JupyterLab's CSS variables
// (with fallbacks for other front ends).
import { EMPTY_CSS } from "../lib/empty.js";
import { LINK_CSS, THEME } from "../lib/theme.js";

export const CSS = `
.xw-op-profile {
  ${THEME}
  border: 1px solid var(--xw-border); border-radius: 3px; width: 100%; box-sizing: border-box;
}
.xw-op-profile * { box-sizing: border-box; }
.xw-op-overview { padding: 8px 10px; border-bottom: 1px solid var(--xw-border); background: var(--xw-panel); }
.xw-op-tiles { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: baseline; }
.xw-op-tile { display: flex; flex-direction: column; min-width: 90px; }
.xw-op-tile-label { color: var(--xw-fg2); font-size: 11px; }
.xw-op-tile-value { font-size: 15px; font-weight: 600; }
.xw-op-suggestions { margin: 8px 0 0 0; padding-left: 18px; line-height: 17px; }
.xw-op-suggestions li { margin: 2px 0; }
.xw-op-muted { color: var(--xw-fg2); }
.xw-op-read { margin-top: 6px; color: var(--xw-fg2); font-size: 11px; }
.xw-op-controls { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 14px; padding: 6px 10px;
  border-bottom: 1px solid var(--xw-border); }
.xw-op-controls label { display: inline-flex; align-items: center; gap: 5px; white-space: nowrap; }
.xw-op-profile select, .xw-op-profile input[type="search"] { font: inherit; color: var(--xw-fg);
  background: var(--xw-bg); border: 1px solid var(--xw-border1); border-radius: 3px; padding: 2px 4px; height: 24px; }
.xw-op-profile input[type="search"] { width: 170px; }
.xw-op-profile input[type="range"] { width: 110px; }
.xw-op-problem { color: var(--xw-error); }
.xw-op-profile { container-type: inline-size; }
.xw-op-body { display: flex; align-items: flex-start; gap: 8px; }
.xw-op-table-wrap { overflow: auto; max-height: 560px; flex: 1 1 auto; min-width: 0; }
.xw-op-side { flex: 0 0 380px; max-height: 560px; display: flex; flex-direction: column;
  border-left: 1px solid var(--xw-border); }
.xw-op-side-hint { padding: 10px; color: var(--xw-fg2); }
@container (max-width: 960px) {
  .xw-op-body { flex-direction: column; align-items: stretch; }
  .xw-op-side { flex: 0 0 auto; border-left: 0; border-top: 1px solid var(--xw-border); }
}
.xw-op-table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
.xw-op-table th { position: sticky; top: 0; z-index: 1; background: var(--xw-panel2); text-align: right;
  font-weight: 600; padding: 4px 5px; border-bottom: 1px solid var(--xw-border1); white-space: nowrap; }
.xw-op-table th.xw-op-left { text-align: left; }
.xw-op-table td { padding: 2px 5px; text-align: right; white-space: nowrap; border-bottom: 1px solid var(--xw-border); }
.xw-op-table td.xw-op-left { text-align: left; }
.xw-op-table tr[data-kind="group"] td { font-weight: 600; background: var(--xw-panel); }
.xw-op-table tr[data-kind="idle"] td { color: var(--xw-fg2); font-style: italic; }
.xw-op-table tr[data-kind="fused"] td { color: var(--xw-fg2); }
.xw-op-table tbody tr:hover td { background: var(--xw-panel2); }
.xw-op-table tr[data-active="1"] td { outline: none; background: var(--xw-panel2); box-shadow: inset 0 -1px 0 var(--xw-accent); }
.xw-op-table .xw-op-name { position: sticky; left: 0; background: var(--xw-bg); box-shadow: inset -1px 0 0 var(--xw-border); }
.xw-op-table td.xw-op-name { z-index: 1; }
.xw-op-table th.xw-op-name { z-index: 2; background: var(--xw-panel2); }
.xw-op-name .xw-op-toggle { display: inline-block; width: 14px; cursor: pointer; user-select: none; color: var(--xw-fg2); }
.xw-op-framework { color: var(--xw-fg2); }
.xw-op-share { position: relative; min-width: 56px; }
.xw-op-share-bar { position: absolute; left: 0; top: 3px; bottom: 3px; background: var(--xw-accent); opacity: .18; }
.xw-op-util { min-width: 56px; }
.xw-op-card { overflow-y: auto; min-height: 0; padding: 8px 10px; background: var(--xw-bg); }
.xw-op-card[hidden] { display: none; }
.xw-op-card-title { font-weight: 600; font-size: 13px; overflow-wrap: anywhere; display: flex; justify-content: space-between; gap: 6px; }
.xw-op-card-close { border: 0; background: none; color: var(--xw-fg2); cursor: pointer; font-size: 15px; padding: 0 4px; }
.xw-op-card dl { display: grid; grid-template-columns: max-content 1fr; gap: 3px 10px; margin: 8px 0; }
.xw-op-card dt { color: var(--xw-fg2); white-space: nowrap; }
.xw-op-card dd { margin: 0; overflow-wrap: anywhere; }
.xw-op-card pre { font-family: var(--xw-mono); font-size: 11px; white-space: pre-wrap; overflow-wrap: anywhere;
  background: var(--xw-panel); border: 1px solid var(--xw-border); border-radius: 3px; padding: 5px 6px; margin: 4px 0 8px; max-height: 180px; overflow-y: auto; }
.xw-op-card-section { color: var(--xw-fg2); font-size: 11px; margin-top: 6px; }
.xw-op-bar { height: 6px; border-radius: 3px; background: var(--xw-panel2); margin-top: 2px; overflow: hidden; }
.xw-op-bar > div { height: 100%; }
.xw-op-roofline { border-top: 1px solid var(--xw-border); padding: 6px 8px; min-height: 40px; }
.xw-op-status { padding: 4px 10px; color: var(--xw-fg2); min-height: 20px; }
.xw-op-error { margin: 12px; padding: 10px 12px; border: 1px solid var(--xw-error); border-radius: 3px;
  color: var(--xw-fg); white-space: pre-wrap; overflow-wrap: anywhere; }
.xw-op-error b { color: var(--xw-error); }
${LINK_CSS}
${EMPTY_CSS}
`;
