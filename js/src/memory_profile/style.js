// The widget's stylesheet, scoped under .xw-mp, themed by JupyterLab's CSS variables.
import { TABLE_CSS } from "../lib/table.js";
import { frameCSS, tilesCSS } from "../lib/view_style.js";

export const CSS = `${frameCSS(".xw-mp")}
.xw-mp-head select { font: inherit; color: var(--xw-fg); background: var(--xw-bg); border: 1px solid var(--xw-border1);
  border-radius: 3px; padding: 2px 4px; height: 24px; max-width: 300px; }
.xw-mp-message { margin: 10px; padding: 8px 12px; border-left: 3px solid #757575; background: var(--xw-panel);
  line-height: 18px; max-width: 120ch; white-space: pre-wrap; }
.xw-mp-message b { display: block; margin-bottom: 2px; }
${tilesCSS(".xw-mp", { gap: 22, minWidth: 90 })}
.xw-mp-timeline { display: flex; gap: 10px; align-items: flex-start; padding: 4px 10px; }
.xw-mp-plot { flex: 1 1 auto; min-width: 0; }
.xw-mp-chart { width: 100%; min-height: 40px; cursor: crosshair; }
.xw-mp-note { color: var(--xw-fg2); font-size: 11px; min-height: 14px; }
.xw-mp-card { flex: 0 0 300px; margin-top: 30px; padding: 8px 10px; border: 1px solid var(--xw-border1);
  border-radius: 3px; background: var(--xw-panel); line-height: 17px; }
.xw-mp-card-title { font-weight: 600; margin-bottom: 4px; }
.xw-mp-card dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 10px; margin: 0; }
.xw-mp-card dt { color: var(--xw-fg2); white-space: nowrap; }
.xw-mp-card dd { margin: 0; overflow-wrap: anywhere; font-variant-numeric: tabular-nums; }
.xw-mp-card-hint, .xw-mp-card-sent { margin-top: 6px; color: var(--xw-fg2); font-size: 11px; }
.xw-mp-breakdown { padding: 6px 10px 10px 10px; border-top: 1px solid var(--xw-border); }
.xw-mp-section { font-weight: 600; margin: 2px 0; }
@media (max-width: 760px) { .xw-mp-timeline { flex-direction: column; } .xw-mp-card { flex: none; width: 100%; margin-top: 0; } }
${TABLE_CSS}
`;
