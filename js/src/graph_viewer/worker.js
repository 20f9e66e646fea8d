// The layout's Web Worker (bundled into a string by build.mjs, started from a Blob URL): a large
// graph is laid out here, so the page keeps answering meanwhile.
import { layout } from "./layout.js";

self.onmessage = (event) => {
  const { id, nodes, edges, options } = event.data;
  try {
    self.postMessage({ id, layout: layout(nodes, edges, options) });
  } catch (error) {
    self.postMessage({ id, error: String(error?.message ?? error) });
  }
};
