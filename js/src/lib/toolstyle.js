// The look the table tools share (framework op stats, kernel stats, HLO stats, roofline):
// a header of tiles, a row of controls, charts side by side, the shared table. Scoped under the
// class the view gives its root.
import { LINK_CSS, THEME } from "./theme.js";
import { TABLE_CSS } from "./table.js";

export function toolCSS(root) {
  return `
${root} { ${THEME}
  border: 1px solid var(--xw-border); border-radius: 3px; width: 100%; box-sizing: border-box; }
${root} * { box-sizing: border-box; }
${root} .xw-tool-head { padding: 8px 10px; border-bottom: 1px solid var(--xw-border); background: var(--xw-panel); }
${root} .xw-tool-title { font-weight: 600; font-size: 13px; margin-bottom: 6px; }
${root} .xw-tool-title span { color: var(--xw-fg2); font-weight: 400; }
${root} .xw-tiles { display: flex; flex-wrap: wrap; gap: 6px 22px; align-items: baseline; }
${root} .xw-tile { display: flex; flex-direction: column; min-width: 90px; }
${root} .xw-tile-label { color: var(--xw-fg2); font-size: 11px; }
${root} .xw-tile-value { font-size: 15px; font-weight: 600; }
${root} .xw-notes { margin: 6px 0 0 0; color: var(--xw-fg2); font-size: 11px; }
${root} .xw-controls { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 16px; padding: 6px 10px;
  border-bottom: 1px solid var(--xw-border); }
${root} .xw-controls label { display: inline-flex; align-items: center; gap: 5px; white-space: nowrap; }
${root} .xw-controls select { font: inherit; color: var(--xw-fg); background: var(--xw-bg);
  border: 1px solid var(--xw-border1); border-radius: 3px; padding: 2px 4px; height: 24px; }
${root} .xw-charts { display: flex; flex-wrap: wrap; gap: 8px 18px; padding: 6px 10px; }
${root} .xw-charts:empty { display: none; }
${root} .xw-chart { min-height: 40px; }
${root} .xw-chart:has(> .xw-pie-legend) { display: flex; align-items: center; gap: 6px; }
${root} .xw-pie-legend { list-style: none; margin: 0; padding: 0; font: 10px/14px helvetica, arial, sans-serif;
  color: var(--xw-fg2); white-space: nowrap; }
${root} .xw-pie-key { display: inline-block; width: 10px; height: 10px; margin-right: 5px; vertical-align: -1px; }
${root} .xw-chart-wide > .xw-chart { flex: 1 1 100%; min-width: 0; }
${root} .xw-dt-short .xw-dt-scroll { max-height: 230px; }
${root} .xw-body h4 { margin: 10px 0 0 0; font-size: 12px; }
${root} .xw-roof-key { display: flex; flex-wrap: wrap; gap: 4px 14px; padding: 0 10px; }
${root} .xw-swatch { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 5px;
  vertical-align: -1px; border: 1px solid var(--xw-border1); }
${root} .xw-chart-problem, ${root} .xw-problem { color: var(--xw-error); }
${root} .xw-body { padding: 0 10px 6px 10px; }
${root} .xw-status { padding: 4px 10px; color: var(--xw-fg2); min-height: 20px; }
${root} .xw-message { margin: 12px; padding: 10px 12px; border: 1px solid var(--xw-border1); border-radius: 3px;
  white-space: pre-wrap; overflow-wrap: anywhere; }
${root} .xw-mono { font-family: var(--xw-mono); }
${TABLE_CSS}
${LINK_CSS}
`;
}
