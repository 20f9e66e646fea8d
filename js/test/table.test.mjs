// The shared table's pure parts: ordering, filtering, CSV text, default cell text.
import assert from "node:assert/strict";
import { test } from "node:test";
import { compareValues, defaultFormat, elideMiddle, filterRows, rowsOf, sortRows, toCsv } from "../src/lib/table.js";

const ROWS = [
  { name: "fusion.1", type: "fusion", time: 5, note: null },
  { name: "copy", type: "copy", time: null, note: "b" },
  { name: "Fusion.2", type: "fusion", time: 12, note: "a" },
  { name: "dot", type: "dot", time: 5, note: "c" },
];

test("columnar answers become row objects", () => {
  assert.deepEqual(rowsOf({ a: [1, 2], b: ["x", "y"] }), [{ a: 1, b: "x" }, { a: 2, b: "y" }]);
  assert.deepEqual(rowsOf({}), []);
});

test("numbers sort numerically, text alphabetically, ties keep their order, nulls last both ways", () => {
  const names = (rows) => rows.map((r) => r.name);
  assert.deepEqual(names(sortRows(ROWS, "time", true)), ["Fusion.2", "fusion.1", "dot", "copy"]);
  assert.deepEqual(names(sortRows(ROWS, "time", false)), ["fusion.1", "dot", "Fusion.2", "copy"]);
  assert.deepEqual(names(sortRows(ROWS, "note", false)), ["Fusion.2", "copy", "dot", "fusion.1"]);
  assert.deepEqual(names(sortRows(ROWS, "note", true)), ["dot", "copy", "Fusion.2", "fusion.1"]);
  assert.equal(compareValues(NaN, 1, false), 1);
  assert.equal(compareValues(true, false, true), -1);
  assert.notEqual(sortRows(ROWS, null, true), ROWS, "a copy, never the caller's array");
});

test("the filter keeps rows holding every word in a text column, any case; facets keep one value", () => {
  const names = (rows) => rows.map((r) => r.name);
  assert.deepEqual(names(filterRows(ROWS, ["name"], "FUSION")), ["fusion.1", "Fusion.2"]);
  assert.deepEqual(names(filterRows(ROWS, ["name", "type"], "fusion 2")), ["Fusion.2"]);
  assert.deepEqual(names(filterRows(ROWS, ["name"], "  ")), names(ROWS));
  assert.deepEqual(names(filterRows(ROWS, ["name"], "", { type: "fusion" })), ["fusion.1", "Fusion.2"]);
  assert.deepEqual(names(filterRows(ROWS, ["name"], "1", { type: "fusion" })), ["fusion.1"]);
  assert.deepEqual(names(filterRows(ROWS, ["name"], "", { type: "" })), names(ROWS));
  assert.deepEqual(filterRows(ROWS, ["name"], "5"), [], "numbers are not searched as text");
});

test("CSV: raw values under the keys, quoting where needed, empty for missing, CRLF", () => {
  const rows = [
    { a: "plain", b: 1.5, c: true },
    { a: 'say "hi", twice', b: null, c: false },
    { a: "two\nlines", b: NaN, c: null },
    { a: " padded", b: 1e21, c: true },
  ];
  assert.equal(toCsv(rows, ["a", "b", "c"]),
    'a,b,c\r\nplain,1.5,True\r\n"say ""hi"", twice",,False\r\n"two\nlines",,\r\n" padded",1e+21,True\r\n');
  assert.equal(toCsv([], ["x"]), "x\r\n");
});

test("default cell text", () => {
  assert.equal(defaultFormat(1234567), "1,234,567");
  assert.equal(defaultFormat(77773215.73125), "77,773,215.7");
  assert.equal(defaultFormat(0.000123456), "0.0001235");
  assert.equal(defaultFormat(12.34567), "12.35");
  assert.equal(defaultFormat(null), "—");
  assert.equal(defaultFormat(false), "no");
  assert.equal(defaultFormat("x"), "x");
});

test("long names lose their middle, keep both ends, and come to exactly the limit", () => {
  const name = "tf_XLAEigen/-8948125363327474542";
  assert.equal(elideMiddle(name, 100), name);
  assert.equal(elideMiddle(name, name.length), name);
  const cut = elideMiddle(name, 17);
  assert.equal(cut, "tf_XLAEi…27474542");
  assert.equal([...cut].length, 17);
  assert.ok(cut.startsWith("tf_XLA") && cut.endsWith("4542"));
  assert.equal([...elideMiddle("é".repeat(80))].length, 64, "the default limit, by characters");
  assert.equal(elideMiddle(12345, 3), "1…5", "numbers as text");
});
