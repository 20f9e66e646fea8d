// The frame the memory views draw: a bordered box themed by JupyterLab's variables, a wrapping
// header of title, source and pickers, a status line with its errors, and the summary's tiles.
// `p` is the view's class selector (".xw-mp").
import { THEME } from "./theme.js";

export function frameCSS(p) {
  return `
${p} { ${THEME}
  border: 1px solid var(--xw-border); border-radius: 3px; width: 100%; box-sizing: border-box; }
${p} * { box-sizing: border-box; }
${p} [hidden] { display: none !important; }
${p}-head { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 14px; padding: 6px 10px;
  border-bottom: 1px solid var(--xw-border); background: var(--xw-panel); }
${p}-title { font-weight: 600; white-space: nowrap; }
${p}-source { color: var(--xw-fg2); overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
  flex: 1 1 120px; min-width: 0; }
${p}-head label { display: inline-flex; align-items: center; gap: 5px; white-space: nowrap; }
${p}-status { padding: 4px 10px; color: var(--xw-fg2); }
${p}-status:empty { display: none; }
${p}-error { color: var(--xw-error); white-space: pre-wrap; }`;
}

/** The summary under the header: a wrapping row of tiles (label, value, a line under it). */
export function tilesCSS(p, { gap, minWidth }) {
  return `
${p}-summary { padding: 8px 10px; border-bottom: 1px solid var(--xw-border); }
${p}-tiles { display: flex; flex-wrap: wrap; gap: 6px ${gap}px; align-items: baseline; }
${p}-tile { display: flex; flex-direction: column; min-width: ${minWidth}px; }
${p}-tile-label { color: var(--xw-fg2); font-size: 11px; }
${p}-tile-value { font-size: 15px; font-weight: 600; font-variant-numeric: tabular-nums; }
${p}-tile-sub { color: var(--xw-fg2); font-size: 11px; font-variant-numeric: tabular-nums; }`;
}
