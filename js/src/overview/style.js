// The Overview's stylesheet, scoped under .xw-overview, themed by JupyterLab's CSS variables.
import { LINK_CSS, THEME } from "../lib/theme.js";

export const CSS = `
.xw-overview {
  ${THEME}
  display: grid; gap: 8px;
  grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); width: 100%; box-sizing: border-box;
}
.xw-ov-card { border: 1px solid var(--xw-border); border-radius: 3px; padding: 8px 10px; background: var(--xw-panel); min-width: 0; }
.xw-ov-card h3 { margin: 0 0 6px 0; font-size: 13px; font-weight: 600; }
.xw-ov-tiles { display: flex; flex-wrap: wrap; gap: 6px 18px; }
.xw-ov-tile { display: flex; flex-direction: column; min-width: 90px; }
.xw-ov-label { color: var(--xw-fg2); font-size: 11px; }
.xw-ov-value { font-size: 14px; font-weight: 600; overflow-wrap: anywhere; }
.xw-ov-bar { display: flex; height: 14px; margin: 10px 0 6px 0; border-radius: 2px; overflow: hidden; background: var(--xw-border); }
.xw-ov-bar span { height: 100%; }
.xw-ov-legend { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 2px 14px; color: var(--xw-fg2); }
.xw-ov-swatch { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 4px; }
.xw-ov-card ul { margin: 0; padding-left: 18px; line-height: 17px; }
.xw-ov-notes { color: var(--xw-fg2); white-space: pre-wrap; }
.xw-ov-table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
.xw-ov-table th { text-align: right; font-weight: 600; padding: 2px 5px; border-bottom: 1px solid var(--xw-border); white-space: nowrap; }
.xw-ov-table td { text-align: right; padding: 2px 5px; border-bottom: 1px solid var(--xw-border); white-space: nowrap; }
.xw-ov-table th:first-child, .xw-ov-table td:first-child, .xw-ov-table td:nth-child(2), .xw-ov-table th:nth-child(2) { text-align: left; }
.xw-ov-table th.xw-ov-share { white-space: normal; min-width: 88px; line-height: 14px; }
.xw-ov-name { max-width: 260px; overflow: hidden; text-overflow: ellipsis; }
/* A table that fits its card: the numbers keep fixed widths, headers wrap, and the name column
   takes what is left, cut with an ellipsis (the whole name on hover), so the last column never
   falls off the card's right edge. */
.xw-ov-fit { table-layout: fixed; }
.xw-ov-fit th { white-space: normal; vertical-align: bottom; }
.xw-ov-fit th.xw-ov-share { min-width: 0; }
.xw-ov-fit th:nth-child(2) { width: 4em; }
.xw-ov-fit th:nth-child(3), .xw-ov-fit th:nth-child(4) { width: 6em; }
.xw-ov-fit th:nth-child(5) { width: 6.5em; }
.xw-ov-fit th:nth-child(6) { width: 7.5em; }
.xw-ov-fit td.xw-ov-name { max-width: none; }
/* ... on a row of its own: in a half-width card the names would have no room left */
.xw-ov-card[data-card="framework-ops"] { grid-column: 1 / -1; }
.xw-ov-status { color: var(--xw-fg2); padding: 8px; }
.xw-ov-error { color: var(--xw-error); padding: 8px; white-space: pre-wrap; }
.xw-ov-advice li { margin-bottom: 3px; }
.xw-ov-rule { display: inline-block; margin-right: 6px; padding: 0 4px; border: 1px solid var(--xw-border1); border-radius: 3px;
  font: 10px/14px var(--xw-mono); background: var(--xw-panel); color: var(--xw-fg2); }
.xw-ov-rule[data-by="xprof"] { border-color: var(--xw-accent); color: var(--xw-accent); }
.xw-ov-scroll { overflow-x: auto; }
.xw-ov-barcell { width: 35%; min-width: 90px; }
.xw-ov-minibar { margin: 0; height: 10px; }
.xw-ov-stepcell { width: 70%; }
.xw-ov-card[data-card="torch-steps"] { grid-column: 1 / -1; }
.xw-ov-hint { color: var(--xw-fg2); margin: 6px 0 0 0; font-size: 11px; }
.xw-ov-card .xw-ov-scroll + .xw-ov-scroll { margin-top: 8px; }
${LINK_CSS}
`;
