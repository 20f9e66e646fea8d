// What the memory views share: BokehJS and the tool's chart document are loaded once, then one
// `view` request per choice the user makes; choices made in one tick are one request, and a
// newer request replaces an older one (its answer is dropped).
//
// A view mixes these in (Object.assign(View.prototype, chartChoiceMethods)), calls mount and
// begin in its constructor, and provides makeCharts(bokeh, content) (an object with
// embed(signal) and dispose()), loadingText(), syncOptions() and draw(content, buffers), and a
// status element.
import { loadBokeh } from "../charts/bokeh.js";
import { h } from "./dom.js";
import { RequestError, request } from "./transport.js";
import { listen, startView, stopView } from "./view_state.js";

export const BUSY = "Waiting for the kernel (a cell may be running)…";

export const chartChoiceMethods = {
  /** The view's state (startView's), no charts yet, errors shown with `${rootClass}-error`. */
  mount(model, el, rootClass) {
    startView(this, model, el, rootClass);
    this.charts = null;
    this.errorClass = `${rootClass}-error`;
    el.dataset.ready = "0";
  },

  /** Listens to the model (the [event, handler] pairs, dropped on dispose), then loads the charts. */
  begin(listeners) {
    listen(this, listeners);
    this.start().catch((error) => this.fail(error));
  },

  async start() {
    this.status.textContent = "Loading the charts…";
    const onBusy = () => { this.status.textContent = BUSY; };
    const bokeh = await loadBokeh(this.model, { onBusy });
    const answer = await request(this.model, "charts", {}, { onBusy });
    if (!answer || this.disposed) return;
    this.charts = this.makeCharts(bokeh, answer.content);
    await this.charts.embed(this.abort.signal);
    if (!this.disposed) await this.refresh();
  },

  /** Sets a trait the view's pickers own and asks for the view of the new choice. */
  set(name, value) {
    this.model.set(name, value);
    this.model.save_changes();
    this.choiceChanged();
  },

  choiceChanged() {
    this.syncOptions();
    if (!this.charts || this.refreshQueued) return;
    this.refreshQueued = true;
    queueMicrotask(() => {
      this.refreshQueued = false;
      this.refresh().catch((error) => this.fail(error));
    });
  },

  async refresh() {
    if (this.disposed) return;
    this.el.dataset.ready = "0";
    this.status.textContent = this.loadingText();
    const answer = await request(this.model, "view", {}, {
      channel: "view", onBusy: () => { this.status.textContent = BUSY; },
    });
    if (!answer || this.disposed) return; // a newer choice replaced this request
    this.draw(answer.content, answer.buffers);
  },

  fail(error) {
    if (this.disposed) return;
    const text = error instanceof RequestError ? error.message : String(error?.message ?? error);
    this.status.replaceChildren(h("span", { className: this.errorClass }, text));
    this.el.dataset.ready = "error";
  },

  dispose() {
    stopView(this);
    this.charts?.dispose();
  },
};
