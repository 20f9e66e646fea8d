// The memory profile view's pure parts: decoding the timeline's columns, the snapshot that
// holds at a time, and what a snapshot's card says.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeSnapshots, snapshotAt, snapshotRows } from "../src/memory_profile/snapshots.js";

const bytes = (typedArray) => new Uint8Array(typedArray.buffer);

function answer() {
  const floats = [[1, 2, 5], [0, 0, 0], [1, 1.5, 0.5], [9, 8.5, 9.5], [0, 25, 12.5], [1024, 512, 1024], [1024, 512, 1024]];
  const ints = [[3, 3, -1], [10, 11, 12]];
  const codes = [[0, 0, 1], [1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 0, 0]];
  const buffers = [...floats.map((f) => bytes(Float64Array.from(f))), ...ints.map((i) => bytes(Int32Array.from(i))),
    ...codes.map((c) => bytes(Int32Array.from(c)))];
  const texts = { activity: ["allocation", "deallocation"], op_name: ["", "dense/MatMul"], region_type: ["output"],
    data_type: ["INVALID", "float"], shape: ["[4,8]"] };
  return decodeSnapshots(buffers, texts);
}

test("the answer's buffers become named columns, text by its codes", () => {
  const s = answer();
  assert.deepEqual(Array.from(s.time_us), [1, 2, 5]);
  assert.deepEqual(Array.from(s.event), [10, 11, 12]);
  assert.deepEqual(s.activity, ["allocation", "allocation", "deallocation"]);
  assert.deepEqual(s.op_name, ["dense/MatMul", "", "dense/MatMul"]);
  assert.deepEqual(s.data_type, ["float", "float", "INVALID"]);
});

test("the snapshot that holds at a time is the last at or before it", () => {
  const times = Float64Array.from([1, 2, 2, 5]);
  assert.equal(snapshotAt(times, 0), 0);
  assert.equal(snapshotAt(times, 1), 0);
  assert.equal(snapshotAt(times, 2), 2);
  assert.equal(snapshotAt(times, 4.9), 2);
  assert.equal(snapshotAt(times, 99), 3);
  assert.equal(snapshotAt(new Float64Array(0), 3), 0);
});

test("a card lists XProf's tooltip fields, dashes for what the event lacks", () => {
  const rows = Object.fromEntries(snapshotRows(answer(), 2, 1 << 20));
  assert.equal(rows.Event, "deallocation");
  assert.equal(rows.Op, "dense/MatMul");
  assert.equal(rows.Step, "no steps marked");
  assert.equal(rows["Data type"], "—");
  assert.equal(rows.Allocated, "1.00 KiB");
  assert.equal(rows["In use"], "512.00 KiB (stack 0 B, heap 512.00 KiB)");
  assert.equal(rows.Free, "9.50 MiB");
  assert.equal(rows.Fragmentation, "12.50%");
  assert.equal(Object.fromEntries(snapshotRows(answer(), 0, 1 << 20)).Step, "3");
});

test("a PyTorch trace's extra columns follow the shared ones, and its card lists what [memory] carries", () => {
  const floats = [[1, 2], [0, 0], [1, 0.5], [3, 3.5], [NaN, NaN], [1024, 512], [1024, 512]];
  const ints = [[2, 2], [7, 8]];
  const codes = [[0, 1], [1, 1], [0, 0], [0, 0], [0, 0]];
  const extra = [[4, 4], [0x7f00, 0x7f00]];
  const extraCodes = [[1, 0], [0, 0]];
  const buffers = [...floats, ...extra].map((f) => bytes(Float64Array.from(f)));
  buffers.splice(7, 0, ...[...ints, ...codes].map((i) => bytes(Int32Array.from(i))));
  buffers.push(...extraCodes.map((c) => bytes(Int32Array.from(c))));
  const texts = { activity: ["allocation", "deallocation"], op_name: ["", "aten::mm"], region_type: [""],
    data_type: [""], shape: [""], cpu_op: ["", "aten::mm"], thread: ["thread 1 (python)"] };
  const s = decodeSnapshots(buffers, texts, { floats: ["reserved_bytes", "address"], texts: ["cpu_op", "thread"] });
  assert.deepEqual(Array.from(s.reserved_bytes), [4, 4]);
  assert.deepEqual(s.cpu_op, ["aten::mm", ""]);
  const rows = Object.fromEntries(snapshotRows(s, 1, 1 << 20, "kineto"));
  assert.equal(rows.Event, "free");
  assert.equal(rows.Size, "512 B");
  assert.equal(rows.Address, "0x7f00");
  assert.equal(rows["Allocated by"], "aten::mm");
  assert.equal(rows["In op"], "—");
  assert.equal(rows.Thread, "thread 1 (python)");
  assert.equal(rows.Allocated, "512.00 KiB");
  assert.equal(rows.Reserved, "4.00 MiB");
});

test("a PyTorch trace without Total Reserved: the card says reserved is unknown, not 0", () => {
  const floats = [[1], [0], [1], [NaN], [NaN], [512], [512]];
  const buffers = [...floats, [NaN], [0]].map((f) => bytes(Float64Array.from(f)));
  buffers.splice(7, 0, ...[[5], [9], [0], [0], [0], [0], [0]].map((i) => bytes(Int32Array.from(i))));
  buffers.push(...[[0], [0]].map((c) => bytes(Int32Array.from(c))));
  const texts = { activity: ["allocation"], op_name: ["aten::empty"], region_type: [""], data_type: [""], shape: [""],
    cpu_op: ["aten::empty"], thread: ["thread 1"] };
  const s = decodeSnapshots(buffers, texts, { floats: ["reserved_bytes", "address"], texts: ["cpu_op", "thread"] });
  const rows = Object.fromEntries(snapshotRows(s, 0, 1 << 20, "kineto"));
  assert.equal(rows.Reserved, "unknown (not in the trace)");
  assert.equal(rows.Address, "—");
  assert.equal(rows.Allocated, "1.00 MiB");
});
