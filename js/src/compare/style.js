// The comparison's stylesheet, scoped under .xw-compare, themed by JupyterLab's CSS variables.
import { THEME } from "../lib/theme.js";
import { TABLE_CSS } from "../lib/table.js";

export const BEFORE = "#4e79a7";
export const AFTER = "#f28e2b";

export const CSS = `
.xw-compare {
  ${THEME}
  border: 1px solid var(--xw-border); border-radius: 3px; width: 100%; box-sizing: border-box;
}
.xw-compare * { box-sizing: border-box; }
.xw-cmp-title { padding: 6px 10px; border-bottom: 1px solid var(--xw-border); background: var(--xw-panel);
  display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: baseline; }
.xw-cmp-title b { font-size: 13px; }
.xw-cmp-run { color: var(--xw-fg2); overflow-wrap: anywhere; }
.xw-cmp-swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px;
  vertical-align: -1px; }
.xw-cmp-summary { margin: 0; padding: 8px 10px; font-size: 13px; line-height: 19px;
  border-bottom: 1px solid var(--xw-border); }
.xw-cmp-status { padding: 6px 10px; color: var(--xw-fg2); }
.xw-cmp-status:empty { display: none; }
.xw-cmp-error { color: var(--xw-error); white-space: pre-wrap; }
.xw-cmp-tabs { display: flex; gap: 2px; padding: 6px 10px 0; border-bottom: 1px solid var(--xw-border1); }
.xw-cmp-tabs button { font: inherit; padding: 4px 14px; cursor: pointer; color: var(--xw-fg2);
  background: transparent; border: 1px solid transparent; border-bottom: 0; border-radius: 3px 3px 0 0;
  margin-bottom: -1px; }
.xw-cmp-tabs button[aria-selected="true"] { color: var(--xw-fg); background: var(--xw-bg);
  border-color: var(--xw-border1); font-weight: 600; }
.xw-cmp-panel { padding: 8px 10px; }
.xw-cmp-panel[hidden] { display: none; }
.xw-cmp-panel h3 { margin: 10px 0 4px; font-size: 13px; }
.xw-cmp-panel h3:first-child { margin-top: 0; }
.xw-cmp-note { color: var(--xw-fg2); margin: 4px 0; max-width: 120ch; }
.xw-cmp-message { border-left: 3px solid #757575; background: var(--xw-panel); padding: 6px 10px;
  white-space: pre-wrap; font-family: var(--xw-mono); }
.xw-cmp-breakdown { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 2px 0 8px; }
.xw-cmp-breakdown th, .xw-cmp-breakdown td { padding: 2px 14px 2px 0; text-align: right; }
.xw-cmp-breakdown th { color: var(--xw-fg2); font-weight: 400; }
.xw-cmp-breakdown td:first-child, .xw-cmp-breakdown th:first-child { text-align: left; }
.xw-cmp-breakdown tr:first-of-type + tr td { font-weight: 600; }
.xw-cmp-controls { display: flex; flex-wrap: wrap; gap: 6px 16px; align-items: center; margin: 4px 0; }
.xw-cmp-controls select { font: inherit; color: var(--xw-fg); background: var(--xw-bg);
  border: 1px solid var(--xw-border1); border-radius: 3px; height: 24px; }
.xw-cmp-chart { width: 100%; min-height: 40px; }
.xw-cmp-counts { display: flex; flex-wrap: wrap; gap: 6px; }
.xw-cmp-badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 11px; line-height: 16px;
  color: #fff; background: #757575; white-space: nowrap; }
.xw-cmp-badge[data-status="slower"], .xw-cmp-badge[data-status="grew"] { background: #c62828; }
.xw-cmp-badge[data-status="faster"], .xw-cmp-badge[data-status="shrank"] { background: #2e7d32; }
.xw-cmp-badge[data-status="added"], .xw-cmp-badge[data-status="new"] { background: #6a1b9a; }
.xw-cmp-badge[data-status="removed"], .xw-cmp-badge[data-status="gone"] { background: #455a64; }
.xw-cmp-badge[data-status="more"] { background: #ad5f00; }
.xw-cmp-badge[data-status="fewer"] { background: #00695c; }
.xw-cmp-up { color: #c62828; }
.xw-cmp-down { color: #2e7d32; }
${TABLE_CSS}
`;
