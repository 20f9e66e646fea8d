// The layout's Web Worker (bundled into a string by build.mjs, started from a Blob URL): a large
// graph is decoded from the kernel's binary reply and laid out here, so the page keeps answering
// meanwhile; the layout goes back as typed arrays (packed.js). A large graph's op neighbourhood
// is laid out and sent first (`preview`), so the view draws a screenful before all of it is done.
import { layout, previewLayout } from "./layout.js";
import { packLayout } from "./packed.js";
import { decodeGraph } from "./wire.js";

const PREVIEW_NODES = 2000; // a larger graph first sends the layout of its op's neighbourhood
const PREVIEW_HOPS = 3;

self.onmessage = (event) => {
  const { id, header, buffers, options } = event.data;
  const post = (out, preview) => {
    const { message, transfer } = packLayout(out);
    self.postMessage({ id, layout: message, preview }, transfer);
  };
  try {
    const { nodes, edges } = decodeGraph(header, buffers);
    if (nodes.length > PREVIEW_NODES) post(previewLayout(nodes, edges, PREVIEW_HOPS, options), true);
    post(layout(nodes, edges, options), false);
  } catch (error) {
    self.postMessage({ id, error: String(error?.message ?? error) });
  }
};
