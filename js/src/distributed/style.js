// The widget's stylesheet, scoped under .xw-dv, themed by JupyterLab's CSS variables.
import { TABLE_CSS } from "../lib/table.js";
import { THEME } from "../lib/theme.js";

export const CSS = `
.xw-dv { ${THEME}
  border: 1px solid var(--xw-border); border-radius: 3px; width: 100%; box-sizing: border-box; }
.xw-dv * { box-sizing: border-box; }
.xw-dv-head { display: flex; gap: 12px; align-items: center; padding: 6px 10px; border-bottom: 1px solid var(--xw-border);
  background: var(--xw-panel); }
.xw-dv-title { font-weight: 600; white-space: nowrap; }
.xw-dv-source { color: var(--xw-fg2); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
.xw-dv-status { padding: 4px 10px; color: var(--xw-fg2); }
.xw-dv-status:empty { display: none; }
.xw-dv-error { color: var(--xw-error); white-space: pre-wrap; }
.xw-dv-message { margin: 6px 0; padding: 8px 12px; border-left: 3px solid #757575; background: var(--xw-panel);
  white-space: pre-wrap; color: var(--xw-fg); }
.xw-dv-tiles { display: flex; flex-wrap: wrap; gap: 6px 22px; padding: 8px 10px; border-bottom: 1px solid var(--xw-border); }
.xw-dv-tile { display: flex; flex-direction: column; min-width: 90px; }
.xw-dv-tile-label { color: var(--xw-fg2); font-size: 11px; }
.xw-dv-tile-value { font-size: 15px; font-weight: 600; font-variant-numeric: tabular-nums; }
.xw-dv-tile-sub { color: var(--xw-fg2); font-size: 11px; }
.xw-dv-charts { display: flex; flex-direction: column; gap: 6px; padding: 4px 10px; }
.xw-dv-charts .xw-chart { width: 100%; }
.xw-chart-problem { color: var(--xw-error); }
.xw-dv-section { font-weight: 600; padding: 6px 10px 0 10px; border-top: 1px solid var(--xw-border); }
.xw-dv-note { color: var(--xw-fg2); font-weight: normal; font-size: 11px; margin-left: 8px; }
.xw-dv-body { padding: 0 10px 8px 10px; }
${TABLE_CSS}
`;
