// The palette every view draws with: JupyterLab's theme variables (light and dark follow the
// app), with fallbacks for front ends that define none (Colab, VS Code). Put THEME inside a
// view's root rule; its own rules then use var(--xw-...).
export const THEME = `
  --xw-bg: var(--jp-layout-color0, #fff);
  --xw-panel: var(--jp-layout-color1, #fafafa);
  --xw-panel2: var(--jp-layout-color2, #eee);
  --xw-fg: var(--jp-ui-font-color1, rgba(0,0,0,.87));
  --xw-fg2: var(--jp-ui-font-color2, rgba(0,0,0,.6));
  --xw-border: var(--jp-border-color2, #e0e0e0);
  --xw-border1: var(--jp-border-color1, #bdbdbd);
  --xw-accent: var(--jp-brand-color1, #1976d2);
  --xw-warn: var(--jp-warn-color0, #e65100);
  --xw-error: var(--jp-error-color1, #d32f2f);
  --xw-mono: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, monospace);
  font-family: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
  font-size: 12px; color: var(--xw-fg); background: var(--xw-bg);`;

/** The look of the suite's link buttons, shared by every view that shows them. */
export const LINK_CSS = `
.xw-link { font: inherit; font-size: 11px; margin-left: 8px; padding: 1px 6px; cursor: pointer;
  color: var(--xw-accent); background: transparent; border: 1px solid var(--xw-accent); border-radius: 3px; }
.xw-link:hover { background: var(--xw-accent); color: var(--xw-bg); }`;
