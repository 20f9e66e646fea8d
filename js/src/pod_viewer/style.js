// The widget's stylesheet, scoped under .xw-pv, themed by JupyterLab's CSS variables.
import { TABLE_CSS } from "../lib/table.js";
import { THEME } from "../lib/theme.js";

export const CSS = `
.xw-pv { ${THEME}
  border: 1px solid var(--xw-border); border-radius: 3px; width: 100%; box-sizing: border-box; }
.xw-pv * { box-sizing: border-box; }
.xw-pv-head { display: flex; gap: 12px; align-items: center; padding: 6px 10px; border-bottom: 1px solid var(--xw-border);
  background: var(--xw-panel); }
.xw-pv-title { font-weight: 600; white-space: nowrap; }
.xw-pv-source { color: var(--xw-fg2); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
.xw-pv-status { padding: 4px 10px; color: var(--xw-fg2); }
.xw-pv-status:empty { display: none; }
.xw-pv-error { color: var(--xw-error); white-space: pre-wrap; }
.xw-pv-message { margin: 6px 0; padding: 8px 12px; border-left: 3px solid #757575; background: var(--xw-panel);
  white-space: pre-wrap; color: var(--xw-fg); }
.xw-pv-tiles { display: flex; flex-wrap: wrap; gap: 6px 22px; padding: 8px 10px; border-bottom: 1px solid var(--xw-border); }
.xw-pv-tile { display: flex; flex-direction: column; min-width: 90px; }
.xw-pv-tile-label { color: var(--xw-fg2); font-size: 11px; }
.xw-pv-tile-value { font-size: 15px; font-weight: 600; font-variant-numeric: tabular-nums; }
.xw-pv-tile-sub { color: var(--xw-fg2); font-size: 11px; }
.xw-pv-legend { display: flex; flex-wrap: wrap; gap: 4px 16px; padding: 6px 10px 0 10px; color: var(--xw-fg2); }
.xw-pv-swatch { display: inline-block; width: 12px; height: 10px; margin-right: 4px; border: 1px solid var(--xw-border1);
  vertical-align: -1px; }
.xw-pv-outline { border: 2px solid #111; }
.xw-pv-charts { display: flex; flex-direction: column; gap: 6px; padding: 4px 10px; }
.xw-pv-charts .xw-chart { width: 100%; }
.xw-pv-chart-problem, .xw-chart-problem { color: var(--xw-error); }
.xw-pv-section { font-weight: 600; padding: 6px 10px 0 10px; border-top: 1px solid var(--xw-border); }
.xw-pv-body { padding: 0 10px 8px 10px; }
${TABLE_CSS}
`;
