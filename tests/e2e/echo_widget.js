// Test-only front end: proves the transport and the Bokeh loader in a real notebook page.
// Marks its element data-ready="1" once the binary round trip checked out and the chart is drawn,
// then data-checks="ok" once stale-drop, busy and error replies behaved.
import { loadBokeh, embedItem } from "../../js/src/charts/bokeh.js";
import { RequestError, request, typed } from "../../js/src/lib/transport.js";

// The kernel sends value i = i * 2654435761 mod 2**32: every byte of every chunk matters.
function firstBadIndex(values) {
  for (let i = 0; i < values.length; i++) {
    if (values[i] !== Math.imul(i, 2654435761) >>> 0) return i;
  }
  return -1;
}

async function drawn(model, el, status, signal) {
  const n = model.get("n");
  const { content, buffers } = await request(model, "numbers", { n });
  const values = typed(buffers[0], Uint32Array);
  const bad = values.length === n ? firstBadIndex(values) : `length ${values.length}`;
  if (bad !== -1) throw new Error(`binary round trip broken at ${bad}`);
  el.dataset.numbers = String(content.n);
  status.textContent = `${n.toLocaleString("en")} uint32 values received and checked`;

  const bokeh = await loadBokeh(model);
  const chart = await request(model, "chart");
  const views = await embedItem(el.querySelector(".xw-echo-chart"), chart.content.item, bokeh, signal);
  el.dataset.bokeh = bokeh.version;
  el.dataset.ready = "1";
  return views;
}

async function transportChecks(model) {
  const failures = [];
  const older = request(model, "echo", { i: 1 }, { channel: "c" });
  const newer = request(model, "echo", { i: 2 }, { channel: "c" });
  const [a, b] = await Promise.all([older, newer]);
  if (a !== null || b?.content.i !== 2) failures.push(`stale: ${JSON.stringify([a, b?.content])}`);

  let busy = false;
  const slow = await request(model, "sleep", { seconds: 1.2 }, { onBusy: () => (busy = true) });
  if (!busy || !slow.content.slept) failures.push(`busy: ${busy} ${JSON.stringify(slow.content)}`);

  try {
    await request(model, "fail");
    failures.push("error: no rejection");
  } catch (error) {
    if (!(error instanceof RequestError) || error.message !== "echo: asked to fail") {
      failures.push(`error: ${error}`);
    }
  }
  return failures.length ? failures.join("; ") : "ok";
}

export default {
  render({ model, el, signal }) {
    el.classList.add("xw-echo");
    const status = document.createElement("div");
    const chart = document.createElement("div");
    chart.className = "xw-echo-chart";
    el.append(status, chart);
    let views = null;
    drawn(model, el, status, signal)
      .then((drawnViews) => {
        views = drawnViews;
        return transportChecks(model);
      })
      .then((result) => (el.dataset.checks = result))
      .catch((error) => {
        el.dataset.ready = "error";
        status.textContent = String(error);
      });
    return () => views?.clear();
  },
};
