// The Graph Viewer's look, on the shared palette (lib/theme.js).
import { LINK_CSS, THEME } from "../lib/theme.js";

export const CSS = `
.xw-gv { ${THEME} position: relative; }
.xw-gv-bar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; padding: 4px 0 6px; }
.xw-gv-bar label { display: inline-flex; gap: 4px; align-items: center; color: var(--xw-fg2); }
.xw-gv-bar select, .xw-gv-bar input, .xw-gv-bar button { font: inherit; color: var(--xw-fg);
  background: var(--xw-bg); border: 1px solid var(--xw-border1); border-radius: 3px; padding: 1px 4px; }
.xw-gv-bar select { max-width: 320px; }
.xw-gv-bar input[type=number] { width: 44px; }
.xw-gv-bar input[type=search] { width: 200px; }
.xw-gv-bar button { cursor: pointer; }
.xw-gv-title { color: var(--xw-fg2); padding-bottom: 4px; overflow-wrap: anywhere; }
.xw-gv-stage { position: relative; height: 560px; border: 1px solid var(--xw-border); overflow: hidden;
  background: var(--xw-bg); cursor: grab; outline: none; }
.xw-gv-stage:focus-visible { border-color: var(--xw-accent); }
.xw-gv-stage.xw-gv-dragging { cursor: grabbing; }
.xw-gv-stage svg { display: block; width: 100%; height: 100%; user-select: none; }
.xw-gv-overview { position: absolute; inset: 0; width: 100%; height: 100%; }
.xw-gv-node rect { stroke: var(--xw-border1); stroke-width: 1; }
.xw-gv-node text { font-size: 11px; fill: var(--xw-fg); }
.xw-gv-node text.xw-gv-name { font-weight: 600; }
.xw-gv-node.xw-gv-untimed rect { fill: var(--xw-panel2); }
.xw-gv-node.xw-gv-centre rect { stroke: #b71c1c; stroke-width: 3; }
.xw-gv-node.xw-gv-match rect { stroke: var(--xw-accent); stroke-width: 3; }
.xw-gv-node.xw-gv-pinned rect { stroke: var(--xw-accent); stroke-dasharray: 4 2; stroke-width: 2; }
.xw-gv-node { cursor: pointer; }
.xw-gv-cluster rect { fill-opacity: .35; stroke: var(--xw-border1); stroke-dasharray: 3 2; }
.xw-gv-cluster text { font-size: 11px; fill: var(--xw-fg2); cursor: pointer; }
.xw-gv-cluster text:hover { fill: var(--xw-accent); }
.xw-gv-edge path { fill: none; stroke: var(--xw-fg2); stroke-width: 1; }
.xw-gv-edge path.xw-gv-head { fill: var(--xw-fg2); stroke: none; }
.xw-gv-card { position: absolute; z-index: 5; max-width: 460px; padding: 6px 8px; background: var(--xw-panel);
  border: 1px solid var(--xw-border1); border-radius: 4px; box-shadow: 0 2px 8px rgba(0,0,0,.18);
  pointer-events: auto; overflow-wrap: anywhere; }
.xw-gv-card h4 { margin: 0 0 4px; font-size: 12px; }
.xw-gv-card table { border-collapse: collapse; }
.xw-gv-card td { padding: 0 8px 0 0; vertical-align: top; }
.xw-gv-card td:first-child { color: var(--xw-fg2); white-space: nowrap; }
.xw-gv-card pre, .xw-gv-text { font-family: var(--xw-mono); font-size: 11px; white-space: pre-wrap;
  margin: 4px 0 0; max-height: 160px; overflow: auto; }
.xw-gv-text { max-height: 320px; border: 1px solid var(--xw-border); padding: 4px; background: var(--xw-panel); }
.xw-gv-card button { font: inherit; font-size: 11px; margin: 4px 6px 0 0; cursor: pointer; }
.xw-gv-status { color: var(--xw-fg2); padding-top: 4px; }
.xw-gv-problem { color: var(--xw-error); }
.xw-gv-legend { display: inline-flex; align-items: center; gap: 4px; color: var(--xw-fg2); }
.xw-gv-legend span { display: inline-block; width: 60px; height: 10px; border: 1px solid var(--xw-border1);
  background: linear-gradient(to right, var(--xw-bg), #f00); }
${LINK_CSS}`;
