// A widget lives as long as the kernel that made it. A restart or a shutdown takes the widget's
// Python object along: its model stays on the page, but nothing will ever answer it again, and
// only running the cell again makes a new one. So once the kernel is gone, the view gives way to a
// message saying so, and every request still waiting is rejected.
//
// JupyterLab and Notebook 7 say so through the widget manager's kernel connection (the same
// connection lives on across a restart; its status tells). On any host, a model that can no
// longer send (its comm closed) is gone too: the transport ends its life.
import { h } from "./dom.js";
import { THEME } from "./theme.js";

export const KERNEL_GONE = "The kernel this widget ran in is gone (restarted or shut down). "
  + "Run its cell again to bring the widget back.";

// "starting" is a new kernel process announcing itself: a restart asked for elsewhere (another
// tab, the REST API), which the page's widget manager does not notice.
const GONE_STATUSES = new Set(["restarting", "autorestarting", "starting", "dead"]);

const CSS = `
.xw-gone { ${THEME} padding: 10px 12px; border-left: 3px solid var(--xw-warn);
  background: var(--xw-panel); font-size: 13px; }`;

/** A request that cannot be answered: the kernel behind the widget is gone. */
export class KernelGoneError extends Error {
  constructor() {
    super(KERNEL_GONE);
    this.name = "KernelGoneError";
  }
}

class KernelLife {
  constructor() {
    this.gone = false;
    this.listeners = new Set();
  }

  /** Calls `listener` once, when the kernel goes; returns a function that stops listening. */
  onGone(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  end() {
    if (this.gone) return;
    this.gone = true;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener();
  }
}

const lives = new WeakMap();

/** The life of the kernel behind `model`, shared by everything that holds this model. */
export function kernelLife(model) {
  let life = lives.get(model);
  if (!life) {
    life = new KernelLife();
    lives.set(model, life);
  }
  return life;
}

// Ends the model's life when the host's kernel connection restarts, dies or is disposed; returns
// a function that stops watching. Hosts without a kernel connection (Colab) are not watched.
function watchKernel(model, life) {
  const kernel = model.widget_manager?.kernel;
  if (!kernel?.statusChanged || !kernel.disposed) return () => {};
  if (kernel.isDisposed) {
    life.end();
    return () => {};
  }
  const onStatus = (_, status) => { if (GONE_STATUSES.has(status)) life.end(); };
  const onDisposed = () => life.end();
  kernel.statusChanged.connect(onStatus);
  kernel.disposed.connect(onDisposed);
  return () => {
    kernel.statusChanged.disconnect(onStatus);
    kernel.disposed.disconnect(onDisposed);
  };
}

/**
 * Renders a view into `el` with `mount()` (which returns the view's dispose) while the kernel
 * lives; once it is gone the view is disposed and `el` shows KERNEL_GONE. Returns the cleanup.
 */
export function whileKernelLives(model, el, mount) {
  const life = kernelLife(model);
  const stopWatching = watchKernel(model, life);
  let dispose = null;
  const showGone = () => {
    dispose?.();
    dispose = null;
    stopWatching();
    el.replaceChildren(h("style", {}, CSS), h("div", { className: "xw-gone", role: "alert" }, KERNEL_GONE));
  };
  if (!life.gone) dispose = mount();
  if (life.gone) { // already, or the view's first request found the comm closed
    showGone();
    return () => {};
  }
  const stopListening = life.onGone(showGone);
  return () => {
    stopListening();
    stopWatching();
    dispose?.();
    dispose = null;
  };
}
