// The widget's stylesheet, scoped under .xw-ip, themed by JupyterLab's CSS variables (with
// fallbacks for other front ends).
import { THEME } from "../lib/theme.js";

export const CSS = `
.xw-ip {
  ${THEME}
  border: 1px solid var(--xw-border); border-radius: 3px; width: 100%; box-sizing: border-box;
}
.xw-ip * { box-sizing: border-box; }
.xw-ip-title { padding: 6px 10px; font-weight: 600; border-bottom: 1px solid var(--xw-border);
  background: var(--xw-panel); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.xw-ip-title span { color: var(--xw-fg2); font-weight: 400; }
.xw-ip-section { padding: 8px 10px; border-bottom: 1px solid var(--xw-border); }
.xw-ip-section:last-child { border-bottom: none; }
.xw-ip-section h3 { margin: 0 0 6px 0; font-size: 13px; }
.xw-ip-verdict { display: flex; align-items: baseline; flex-wrap: wrap; gap: 6px 14px; }
.xw-ip-badge { font-weight: 700; font-size: 14px; padding: 2px 8px; border-radius: 3px; color: #fff; }
.xw-ip-badge[data-verdict="HIGHLY"] { background: #c62828; }
.xw-ip-badge[data-verdict="MODERATELY"] { background: #ef6c00; }
.xw-ip-badge[data-verdict="NOT"] { background: #2e7d32; }
.xw-ip-badge[data-verdict="none"] { background: #757575; }
.xw-ip-share { font-size: 14px; }
.xw-ip-muted { color: var(--xw-fg2); }
.xw-ip-recommendation { margin: 6px 0 0 0; line-height: 17px; max-width: 110ch; }
.xw-ip-left-out { margin-top: 6px; }
.xw-ip-left-out ul { margin: 2px 0 0 0; padding-left: 20px; }
.xw-ip-stats { border-collapse: collapse; margin: 2px 0 8px 0; font-variant-numeric: tabular-nums; }
.xw-ip-stats th, .xw-ip-stats td { padding: 2px 12px 2px 0; text-align: right; }
.xw-ip-stats th { color: var(--xw-fg2); font-weight: 400; }
.xw-ip-chart { width: 100%; min-height: 40px; }
.xw-ip-nosteps { border-left: 3px solid #757575; background: var(--xw-panel); padding: 6px 10px; }
.xw-ip-nosteps ul { margin: 4px 0; padding-left: 18px; }
.xw-ip-nosteps pre { font-family: var(--xw-mono); margin: 4px 0 0 0; white-space: pre-wrap; }
.xw-ip-host { display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: flex-start; }
.xw-ip-host > .xw-ip-chart { flex: 1 1 360px; min-width: 300px; }
.xw-ip-breakdown { border-collapse: collapse; font-variant-numeric: tabular-nums; }
.xw-ip-breakdown td { padding: 2px 10px 2px 0; }
.xw-ip-breakdown td.xw-ip-num { text-align: right; }
.xw-ip-swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border-radius: 2px; }
.xw-ip-table-wrap { max-height: 420px; overflow: auto; margin-top: 8px; }
.xw-ip-table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
.xw-ip-table th { position: sticky; top: 0; background: var(--xw-panel2); text-align: left; padding: 4px 8px;
  cursor: pointer; user-select: none; white-space: nowrap; font-weight: 600; }
.xw-ip-table th[aria-sort="descending"]::after { content: " ▼"; font-size: 9px; }
.xw-ip-table th[aria-sort="ascending"]::after { content: " ▲"; font-size: 9px; }
.xw-ip-table td { padding: 3px 8px; border-top: 1px solid var(--xw-border); }
.xw-ip-table td:first-child { font-family: var(--xw-mono); min-width: 22ch; overflow-wrap: anywhere;
  position: sticky; left: 0; background: var(--xw-bg); box-shadow: inset -1px 0 0 var(--xw-border); }
.xw-ip-table th:first-child { left: 0; z-index: 2; }
.xw-ip-table td.xw-ip-num { text-align: right; white-space: nowrap; }
.xw-ip-status { padding: 6px 10px; color: var(--xw-fg2); }
.xw-ip-status:empty { display: none; }
.xw-ip-error { color: var(--xw-error); white-space: pre-wrap; }
`;
