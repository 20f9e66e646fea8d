// The widget's stylesheet, scoped under .xw-mv, themed by JupyterLab's CSS variables (with
// fallbacks for other front ends).
import { EMPTY_CSS } from "../lib/empty.js";
import { frameCSS, tilesCSS } from "../lib/view_style.js";

export const CSS = `${frameCSS(".xw-mv")}
.xw-mv select { font: inherit; color: var(--xw-fg); background: var(--xw-bg); border: 1px solid var(--xw-border1);
  border-radius: 3px; padding: 2px 4px; height: 24px; max-width: 300px; }
.xw-mv-muted { color: var(--xw-fg2); }
${EMPTY_CSS}
${tilesCSS(".xw-mv", { gap: 16, minWidth: 80 })}
.xw-mv-swatch { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 4px; }
.xw-mv-peak { margin-top: 6px; color: var(--xw-fg2); }
.xw-mv-peak code, .xw-mv-card code { font-family: var(--xw-mono); color: var(--xw-fg); }
.xw-mv-chart { width: 100%; min-height: 40px; }
.xw-mv-curve { padding: 4px 10px 0 10px; }
.xw-mv-nocurve { margin: 6px 10px; color: var(--xw-fg2); }
.xw-mv[data-curve="none"] .xw-mv-curve { display: none; }
.xw-mv:not([data-curve="none"]) .xw-mv-nocurve { display: none; }
.xw-mv-nopadding { margin: 8px 0 0 0; color: var(--xw-fg2); }
.xw-mv[data-padding="none"] [data-chart="padding"] { display: none; }
.xw-mv:not([data-padding="none"]) .xw-mv-nopadding { display: none; }
.xw-mv-buffers { display: flex; gap: 10px; align-items: flex-start; padding: 4px 10px 10px 10px;
  border-top: 1px solid var(--xw-border); }
.xw-mv-bars { flex: 1 1 auto; min-width: 0; }
.xw-mv-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; align-items: center; margin: 6px 0 2px 0;
  color: var(--xw-fg2); }
.xw-mv-hatch { display: inline-block; width: 12px; height: 9px; margin-right: 4px; border: 1px solid #888;
  background: repeating-linear-gradient(135deg, #888 0 1px, transparent 1px 4px); }
.xw-mv-card { flex: 0 0 330px; position: sticky; top: 4px; margin-top: 6px; padding: 8px 10px;
  border: 1px solid var(--xw-border1); border-radius: 3px; background: var(--xw-panel); line-height: 17px; }
.xw-mv-card-hint { color: var(--xw-fg2); }
.xw-mv-card-title { font-family: var(--xw-mono); font-weight: 600; overflow-wrap: anywhere; margin-bottom: 4px; }
.xw-mv-card-type { display: inline-block; padding: 0 6px; border-radius: 3px; color: #fff; font-size: 11px;
  margin-bottom: 6px; }
.xw-mv-card dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 10px; margin: 0; }
.xw-mv-card dt { color: var(--xw-fg2); white-space: nowrap; }
.xw-mv-card dd { margin: 0; overflow-wrap: anywhere; font-variant-numeric: tabular-nums; }
.xw-mv-card pre { font-family: var(--xw-mono); margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.xw-mv-card-op { margin-top: 8px; padding-top: 6px; border-top: 1px solid var(--xw-border); }
.xw-mv-card button { font: inherit; margin-top: 4px; padding: 2px 8px; cursor: pointer; color: var(--xw-accent);
  background: var(--xw-bg); border: 1px solid var(--xw-accent); border-radius: 3px; }
.xw-mv-card-sent { color: var(--xw-fg2); font-size: 11px; }
.xw-mv-card-pin { float: right; color: var(--xw-fg2); font-size: 11px; }
@media (max-width: 760px) { .xw-mv-buffers { flex-direction: column; } .xw-mv-card { position: static; flex: none; width: 100%; } }
`;
