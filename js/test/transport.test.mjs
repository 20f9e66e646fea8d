// The transport against a fake anywidget model: chunk reassembly, stale answers, busy, errors,
// a kernel that went away.
import assert from "node:assert/strict";
import { test } from "node:test";
import { KernelGoneError, kernelLife } from "../src/lib/kernel_life.js";
import { RequestError, asBytes, request, typed } from "../src/lib/transport.js";

class FakeModel {
  constructor() {
    this.sent = [];
    this.listeners = [];
  }
  on(name, callback) {
    assert.equal(name, "msg:custom");
    this.listeners.push(callback);
  }
  send(msg) {
    this.sent.push(msg);
  }
  reply(msg, buffers = []) {
    for (const listener of this.listeners) listener(msg, buffers);
  }
  last() {
    return this.sent.at(-1);
  }
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

function respond(model, id, content, buffers = []) {
  model.reply(
    {
      kind: "response", id, chunk: 0, chunks: 1, content,
      sizes: buffers.map((b) => b.byteLength), parts: buffers.map((_, i) => [i, 0]),
    },
    buffers.map((b) => new DataView(b.buffer, b.byteOffset, b.byteLength)),
  );
}

test("a request carries an increasing id and resolves with its content and buffers", async () => {
  const model = new FakeModel();
  const first = request(model, "echo", { n: 1 });
  const second = request(model, "echo", { n: 2 });
  const [a, b] = model.sent;
  assert.deepEqual({ ...a, id: 0 }, { kind: "request", id: 0, method: "echo", params: { n: 1 } });
  assert.equal(b.id, a.id + 1);
  respond(model, b.id, { n: 2 }, [new Uint8Array([5, 6])]);
  respond(model, a.id, { n: 1 });
  assert.deepEqual(await first, { content: { n: 1 }, buffers: [] });
  const got = await second;
  assert.deepEqual(got.content, { n: 2 });
  assert.deepEqual([...got.buffers[0]], [5, 6]);
});

test("a buffer split over chunks is reassembled from slices of any binary type", async () => {
  const model = new FakeModel();
  const pending = request(model, "big");
  const { id } = model.last();
  const whole = Uint8Array.from({ length: 10 }, (_, i) => i);
  const small = new Uint8Array([42]);
  model.reply(
    { kind: "response", id, chunk: 0, chunks: 3, content: { ok: 1 }, sizes: [10, 1], parts: [[0, 0]] },
    [new DataView(whole.buffer, 0, 4)],
  );
  model.reply({ kind: "response", id, chunk: 1, chunks: 3, parts: [[0, 4]] }, [whole.slice(4, 9).buffer]);
  model.reply({ kind: "response", id, chunk: 2, chunks: 3, parts: [[0, 9], [1, 0]] }, [
    whole.subarray(9),
    small,
  ]);
  const { content, buffers } = await pending;
  assert.deepEqual(content, { ok: 1 });
  assert.deepEqual([...buffers[0]], [...whole]);
  assert.deepEqual([...buffers[1]], [42]);
});

test("content sent as a buffer is decoded from UTF-8 JSON", async () => {
  const model = new FakeModel();
  const pending = request(model, "chart");
  const json = new TextEncoder().encode(JSON.stringify({ name: "Ω", values: [1, 2] }));
  model.reply(
    {
      kind: "response", id: model.last().id, chunk: 0, chunks: 1, content_buffer: true,
      sizes: [3, json.length], parts: [[0, 0], [1, 0]],
    },
    [new Uint8Array([1, 2, 3]), json],
  );
  const { content, buffers } = await pending;
  assert.deepEqual(content, { name: "Ω", values: [1, 2] });
  assert.equal(buffers.length, 1);
});

test("buffers come back 8-byte aligned so typed arrays can view them", async () => {
  const model = new FakeModel();
  const pending = request(model, "floats");
  const values = new Float64Array([1.5, -2.25]);
  const backing = new Uint8Array(3 + values.byteLength);
  backing.set(new Uint8Array(values.buffer), 3);
  model.reply(
    { kind: "response", id: model.last().id, chunk: 0, chunks: 1, content: {}, sizes: [16], parts: [[0, 0]] },
    [new DataView(backing.buffer, 3, 16)],
  );
  const { buffers } = await pending;
  assert.equal(buffers[0].byteOffset % 8, 0);
  assert.deepEqual([...typed(buffers[0], Float64Array)], [1.5, -2.25]);
});

test("only the newest request of a channel is answered; older ones resolve to null", async () => {
  const model = new FakeModel();
  const first = request(model, "window", { i: 1 }, { channel: "view" });
  const second = request(model, "window", { i: 2 }, { channel: "view" });
  const third = request(model, "window", { i: 3 }, { channel: "view" });
  assert.equal(model.sent.length, 1, "later requests wait for the one in flight");
  assert.equal(await first, null);
  assert.equal(await second, null);
  respond(model, model.sent[0].id, { i: 1 });
  assert.equal(model.sent.length, 2);
  assert.deepEqual(model.last().params, { i: 3 });
  respond(model, model.last().id, { i: 3 });
  assert.deepEqual((await third).content, { i: 3 });
  const other = request(model, "window", { i: 4 }, { channel: "other" });
  assert.equal(model.sent.length, 3, "channels are independent");
  respond(model, model.last().id, { i: 4 });
  assert.deepEqual((await other).content, { i: 4 });
});

test("a request without an answer after busyAfterMs reports busy, then still resolves", async () => {
  const model = new FakeModel();
  let busy = 0;
  const pending = request(model, "slow", {}, { onBusy: () => busy++, busyAfterMs: 20 });
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(busy, 1);
  respond(model, model.last().id, { done: true });
  assert.deepEqual((await pending).content, { done: true });

  const quick = request(model, "quick", {}, { onBusy: () => busy++, busyAfterMs: 20 });
  respond(model, model.last().id, {});
  await quick;
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(busy, 1, "an answered request never reports busy");
});

test("an error reply rejects with RequestError; the channel moves on", async () => {
  const model = new FakeModel();
  const failing = request(model, "window", {}, { channel: "c" });
  model.reply({ kind: "error", id: model.last().id, method: "window", message: "no such run" });
  await assert.rejects(failing, (error) => error instanceof RequestError && error.message === "no such run");
  const next = request(model, "window", {}, { channel: "c" });
  assert.equal(model.sent.length, 2);
  respond(model, model.last().id, { ok: true });
  assert.deepEqual((await next).content, { ok: true });
});

test("replies to other views' ids and unrelated messages are ignored", async () => {
  const model = new FakeModel();
  const pending = request(model, "x");
  model.reply({ kind: "response", id: -5, chunk: 0, chunks: 1, content: {}, sizes: [], parts: [] });
  model.reply({ kind: "anywidget-command-response", id: model.last().id });
  model.reply(null);
  let settled = false;
  pending.then(() => (settled = true));
  await flush();
  assert.equal(settled, false);
  respond(model, model.last().id, { mine: true });
  assert.deepEqual((await pending).content, { mine: true });
});

test("once the kernel is gone, requests sent or waiting reject, and new ones at once", async () => {
  const model = new FakeModel();
  let busy = 0;
  const sent = request(model, "window", {}, { channel: "c", onBusy: () => busy++, busyAfterMs: 20 });
  const waiting = request(model, "window", { i: 2 }, { channel: "c" });
  const plain = request(model, "table");
  assert.equal(await sent, null, "superseded by the waiting one");
  kernelLife(model).end();
  const gone = (error) => error instanceof KernelGoneError && /Run its cell again/.test(error.message);
  await assert.rejects(waiting, gone);
  await assert.rejects(plain, gone);
  await assert.rejects(request(model, "window", {}, { channel: "c" }), gone);
  assert.equal(model.sent.length, 2, "nothing more is sent");
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(busy, 0, "a dropped request never reports busy");
});

test("a model that can no longer send is gone: its channel does not wait forever", async () => {
  const model = new FakeModel();
  model.send = () => { throw new Error("Cannot send"); };
  const warn = console.warn;
  console.warn = () => {};
  try {
    await assert.rejects(request(model, "window", {}, { channel: "c" }), KernelGoneError);
  } finally {
    console.warn = warn;
  }
  assert.equal(kernelLife(model).gone, true);
  await assert.rejects(request(model, "window", {}, { channel: "c" }), KernelGoneError);
});

test("asBytes accepts DataView, ArrayBuffer and Uint8Array without copying", () => {
  const bytes = new Uint8Array([1, 2, 3, 4]);
  assert.deepEqual([...asBytes(new DataView(bytes.buffer, 1, 2))], [2, 3]);
  assert.deepEqual([...asBytes(bytes.buffer)], [1, 2, 3, 4]);
  assert.equal(asBytes(bytes).buffer, bytes.buffer);
  assert.throws(() => asBytes("text"), TypeError);
});
