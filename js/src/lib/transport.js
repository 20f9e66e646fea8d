// Request/response between a widget view and its Python object, over anywidget custom messages.
//
// Wire format (Python side: xprof_widgets/widgets/_base.py):
//   view -> kernel  {kind: "request", id, method, params}
//   kernel -> view  {kind: "response", id, chunk, chunks, parts: [[bufferIndex, byteOffset], ...],
//                    sizes (chunk 0), content (chunk 0) | content_buffer: true (chunk 0)}
//                   {kind: "error", id, method, message}
// A response comes in one or more chunks (each message at most 4 MB with its buffers); every binary
// buffer of a chunk is one slice of one response buffer, placed at byteOffset. With content_buffer,
// the JSON content is too large for a message and travels as the last buffer, UTF-8 encoded.
import { KernelGoneError, kernelLife } from "./kernel_life.js";

const BUSY_AFTER_MS = 700;
const ID_KEY = "__xprofWidgetsNextRequestId";

/** The kernel answered a request with an error; `message` is meant for the user. */
export class RequestError extends Error {
  constructor(method, message) {
    super(message);
    this.name = "RequestError";
    this.method = method;
  }
}

const transports = new WeakMap();

/**
 * Ask the widget's Python object to run `method(**params)`.
 *
 * Resolves to {content, buffers}: `content` is the JSON the handler returned, `buffers` its binary
 * buffers as Uint8Arrays whose byteOffset is a multiple of 8 (see `typed`). Rejects with
 * RequestError when the handler raised, and with KernelGoneError (at once, and for every request
 * still waiting) once the kernel behind the model is gone.
 *
 * options.channel: only the newest request of a channel is answered. A request made while an older
 * one of its channel is in flight waits for that one, replacing any other waiting request; every
 * superseded request resolves to null at once and its answer, if any, is dropped.
 * options.onBusy: called once when no answer has started to arrive after options.busyAfterMs
 * (default 700 ms), e.g. while the kernel runs a cell; the answer is still delivered later.
 */
export function request(model, method, params = {}, options = {}) {
  let transport = transports.get(model);
  if (!transport) {
    transport = new Transport(model);
    transports.set(model, transport);
  }
  return transport.request(method, params, options);
}

/** A typed-array view of a response buffer, e.g. typed(buffers[0], Float64Array). */
export function typed(bytes, TypedArray) {
  return new TypedArray(bytes.buffer, bytes.byteOffset, bytes.byteLength / TypedArray.BYTES_PER_ELEMENT);
}

// Ids increase across every widget on the page; the random start keeps two pages attached to the
// same kernel (which both receive every reply) from claiming each other's answers.
function nextId() {
  globalThis[ID_KEY] ??= Math.floor(Math.random() * 2 ** 40);
  return globalThis[ID_KEY]++;
}

// DataView (JupyterLab, Notebook 7), ArrayBuffer or Uint8Array (Colab) -> Uint8Array.
export function asBytes(buffer) {
  if (buffer instanceof ArrayBuffer) return new Uint8Array(buffer);
  if (ArrayBuffer.isView(buffer)) return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  throw new TypeError(`unexpected binary buffer ${Object.prototype.toString.call(buffer)}`);
}

function aligned(bytes) {
  return bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
}

class Transport {
  constructor(model) {
    this.model = model;
    this.pending = new Map(); // id -> call
    this.channels = new Map(); // channel -> {inFlight: call | null, waiting: call | null}
    this.life = kernelLife(model);
    this.life.onGone(() => this.dropAll());
    model.on("msg:custom", (msg, buffers) => this.receive(msg, buffers ?? []));
  }

  request(method, params, options) {
    return new Promise((resolve, reject) => {
      if (this.life.gone) {
        reject(new KernelGoneError());
        return;
      }
      const call = {
        id: nextId(), method, params, resolve, reject,
        channel: options.channel ?? null, superseded: false, started: false,
        received: 0, sizes: null, out: null, content: undefined, contentBuffer: false,
      };
      const busyAfter = options.busyAfterMs ?? BUSY_AFTER_MS;
      if (options.onBusy) {
        call.busyTimer = setTimeout(() => {
          if (!call.started && !call.superseded) options.onBusy();
        }, busyAfter);
      }
      if (call.channel === null) return this.send(call);
      let state = this.channels.get(call.channel);
      if (!state) {
        state = { inFlight: null, waiting: null };
        this.channels.set(call.channel, state);
      }
      if (state.waiting) this.supersede(state.waiting);
      if (state.inFlight) {
        this.supersede(state.inFlight);
        state.waiting = call;
      } else {
        state.inFlight = call;
        this.send(call);
      }
    });
  }

  // A model whose comm is closed throws here: nothing will answer it again.
  send(call) {
    this.pending.set(call.id, call);
    try {
      this.model.send({ kind: "request", id: call.id, method: call.method, params: call.params });
    } catch (error) {
      console.warn("xprof_widgets: a request could not be sent:", error);
      this.life.end();
    }
  }

  // The kernel is gone: every call sent or waiting fails now rather than wait forever.
  dropAll() {
    const waiting = [...this.channels.values()].map((state) => state.waiting).filter(Boolean);
    const calls = [...this.pending.values(), ...waiting];
    this.pending.clear();
    this.channels.clear();
    for (const call of calls) {
      clearTimeout(call.busyTimer);
      if (!call.superseded) call.reject(new KernelGoneError());
    }
  }

  supersede(call) {
    call.superseded = true;
    clearTimeout(call.busyTimer);
    call.resolve(null);
  }

  receive(msg, buffers) {
    if (!msg || (msg.kind !== "response" && msg.kind !== "error")) return;
    const call = this.pending.get(msg.id);
    if (!call) return; // another view's request, or a page reload's
    call.started = true;
    clearTimeout(call.busyTimer);
    if (msg.kind === "error") {
      this.finish(call);
      if (!call.superseded) call.reject(new RequestError(call.method, msg.message));
      return;
    }
    if (msg.chunk === 0) {
      call.sizes = msg.sizes;
      call.out = new Array(msg.sizes.length);
      call.content = msg.content;
      call.contentBuffer = Boolean(msg.content_buffer);
    }
    if (!call.superseded) this.place(call, msg.parts, buffers);
    call.received += 1;
    if (call.received < msg.chunks) return;
    this.finish(call);
    if (!call.superseded) call.resolve(this.result(call));
  }

  // A part that is a whole buffer is kept as is (no copy); split buffers are assembled in place.
  place(call, parts, buffers) {
    parts.forEach(([index, offset], i) => {
      const bytes = asBytes(buffers[i]);
      const size = call.sizes[index];
      if (offset === 0 && bytes.byteLength === size) {
        call.out[index] = bytes;
      } else {
        call.out[index] ??= new Uint8Array(size);
        call.out[index].set(bytes, offset);
      }
    });
  }

  result(call) {
    const out = call.out.map(aligned);
    const content = call.contentBuffer ? JSON.parse(new TextDecoder().decode(out.pop())) : call.content;
    return { content, buffers: out };
  }

  // The call is answered: forget it and send its channel's waiting request, if any.
  finish(call) {
    this.pending.delete(call.id);
    if (call.channel === null) return;
    const state = this.channels.get(call.channel);
    if (state.inFlight !== call) return;
    state.inFlight = state.waiting;
    state.waiting = null;
    if (state.inFlight) this.send(state.inFlight);
  }
}
