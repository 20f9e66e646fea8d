// The layout's Web Worker (bundled into a string by build.mjs, started from a Blob URL): a large
// graph is decoded from the kernel's binary reply and laid out here, so the page keeps answering
// meanwhile; the layout goes back as typed arrays (packed.js).
import { layout } from "./layout.js";
import { packLayout } from "./packed.js";
import { decodeGraph } from "./wire.js";

self.onmessage = (event) => {
  const { id, header, buffers, options } = event.data;
  try {
    const { nodes, edges } = decodeGraph(header, buffers);
    const { message, transfer } = packLayout(layout(nodes, edges, options));
    self.postMessage({ id, layout: message }, transfer);
  } catch (error) {
    self.postMessage({ id, error: String(error?.message ?? error) });
  }
};
