// Layouts run in a Web Worker, newest wins: a layout asked while another runs ends the old
// worker (dagre cannot be interrupted) and its promise resolves null. Where no worker can start
// (a page whose policy forbids Blob workers) the worker's own code runs on the page's thread
// instead, so the bundle carries the layout (dagre) once.
import WORKER_SOURCE from "./worker.js?worker";

/** The worker's code run on this thread: a function from a request to its reply. */
function onThisThread() {
  const scope = { postMessage: (data) => scope.reply(data) }; // the transfer list: nothing to do
  new Function("self", WORKER_SOURCE)(scope); // eslint-disable-line no-new-func
  return (request) => {
    let reply;
    scope.reply = (data) => { if (!data.preview) reply = data; }; // nothing is drawn meanwhile here
    scope.onmessage({ data: request });
    if (reply.error) throw new Error(reply.error);
    return reply.layout;
  };
}

export class Layouter {
  constructor() {
    this.worker = null;
    this.url = null;
    this.pending = null;
    this.seq = 0;
    this.onThread = false; // true once a worker failed to start: layouts run here
  }

  /** The layout of the graph reply `header`/`buffers` (wire.js decodes it in the worker), in
   * packed.js's form, or null when a newer one replaced it; `onPreview` gets the worker's
   * layout of the op's neighbourhood first, for a large graph. The buffers are copied to the worker
   * (a memcpy), not transferred: the transport may hold them in one larger buffer. */
  run(header, buffers, options, onPreview = () => {}) {
    this.cancel();
    if (!this.onThread && !this.start()) this.onThread = true;
    const request = { header, buffers, options };
    if (this.onThread) {
      this.here ??= onThisThread();
      return Promise.resolve().then(() => this.here({ id: 0, ...request }));
    }
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending = { id, resolve, reject, onPreview };
      this.worker.postMessage({ id, ...request });
    });
  }

  start() {
    if (this.worker) return true;
    try {
      this.url ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
      this.worker = new Worker(this.url);
    } catch {
      return false;
    }
    this.worker.onmessage = (event) => {
      const call = this.pending;
      if (!call || call.id !== event.data.id) return;
      if (event.data.preview) {
        call.onPreview(event.data.layout);
        return;
      }
      this.pending = null;
      if (event.data.error) call.reject(new Error(event.data.error));
      else call.resolve(event.data.layout);
    };
    this.worker.onerror = (event) => {
      event.preventDefault();
      const call = this.pending;
      this.pending = null;
      call?.reject(new Error(`layout worker: ${event.message || "failed"}`));
    };
    return true;
  }

  /** Ends the layout running now (its promise resolves null). */
  cancel() {
    if (!this.pending) return;
    this.pending.resolve(null);
    this.pending = null;
    this.worker.terminate();
    this.worker = null;
  }

  dispose() {
    this.cancel();
    this.worker?.terminate();
    this.worker = null;
    if (this.url) URL.revokeObjectURL(this.url);
  }
}
