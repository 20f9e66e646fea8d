// A large graph seen from far (a whole module fitted): its boxes and edges painted on one canvas
// instead of tens of thousands of SVG elements, whose restyle and paint held the page for
// seconds. Below OVERVIEW_ZOOM labels are too small to read, so nothing is lost; the view draws
// SVG again (around the view) when zoomed in past it.
export const OVERVIEW_ZOOM = 0.3;
const EDGE_ALPHA = 0.15;
const MIN_BOX_PX = 2;

export class Overview {
  /** `stage`: the element the canvas covers. */
  constructor(stage) {
    this.stage = stage;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "xw-gv-overview";
    this.canvas.hidden = true;
    stage.append(this.canvas);
    this.graph = null;
    this.queued = false;
  }

  /** The graph to paint: its layout, each placed node's fill (layout.nodes order), the centre
   * node's index in layout.nodes (or -1) and the edge colour. Nodes are sorted by fill once, so
   * a paint sets each colour once. */
  setGraph(layout, fills, centre, edgeColor) {
    const order = Array.from(fills.keys()).sort((a, b) => (fills[a] < fills[b] ? -1 : fills[a] > fills[b] ? 1 : 0));
    this.graph = { layout, fills, order, centre, edgeColor };
  }

  /** Shows the canvas and paints it at `view` ({x, y, k}) on the next frame (once per frame). */
  show(view) {
    this.view = view;
    this.canvas.hidden = false;
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      if (!this.canvas.hidden) this.paint();
    });
  }

  hide() {
    this.canvas.hidden = true;
  }

  paint() {
    const { layout, fills, order, centre, edgeColor } = this.graph;
    const ratio = window.devicePixelRatio || 1;
    const W = this.stage.clientWidth;
    const H = this.stage.clientHeight;
    if (this.canvas.width !== Math.round(W * ratio)) this.canvas.width = Math.round(W * ratio);
    if (this.canvas.height !== Math.round(H * ratio)) this.canvas.height = Math.round(H * ratio);
    const ctx = this.canvas.getContext("2d");
    const { x, y, k } = this.view;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.setTransform(ratio * k, 0, 0, ratio * k, ratio * x, ratio * y);
    ctx.beginPath();
    for (const { points } of layout.edges) {
      ctx.moveTo(points[0].x, points[0].y);
      for (let i = 1; i < points.length; i++) ctx.lineTo(points[i].x, points[i].y);
    }
    ctx.lineWidth = 1 / k;
    ctx.strokeStyle = edgeColor;
    ctx.globalAlpha = EDGE_ALPHA; // thousands of long edges cross: opaque, they would hide all
    ctx.stroke();
    ctx.globalAlpha = 1;
    let colour = null;
    const least = MIN_BOX_PX / k; // a box stays a visible dot however far out
    for (const i of order) {
      if (fills[i] !== colour) ctx.fillStyle = colour = fills[i];
      const n = layout.nodes[i];
      const w = Math.max(n.width, least);
      const h = Math.max(n.height, least);
      ctx.fillRect(n.x - w / 2, n.y - h / 2, w, h);
    }
    if (centre >= 0) {
      const n = layout.nodes[centre];
      ctx.lineWidth = 3 / k;
      ctx.strokeStyle = "#b71c1c";
      ctx.strokeRect(n.x - n.width / 2, n.y - n.height / 2, n.width, n.height);
    }
    Object.assign(this.canvas.dataset, { painted: String(layout.nodes.length), edges: String(layout.edges.length) });
  }
}
