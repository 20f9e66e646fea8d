// Step axes count whole steps: a chart of one step would otherwise tick 5.6, 5.8, ... 6.4.
// Every axis whose label names a step (input pipeline, compare, pod viewer; the memory viewer's
// heap-simulator step) gets a ticker that never ticks between integers.

const STEP_LABEL = /\bstep\b/i;

/** The models of a JSON item's document, each once (a model written in full, not a reference). */
function* modelsOf(node) {
  if (Array.isArray(node)) {
    for (const v of node) yield* modelsOf(v);
  } else if (node && typeof node === "object") {
    if (node.type === "object" && node.attributes) yield node;
    for (const v of Object.values(node)) yield* modelsOf(v);
  }
}

/** A step axis: a numeric axis whose label says "step". */
export function isStepAxis(model) {
  return /^(Linear)?Axis$/.test(model.name) && STEP_LABEL.test(model.attributes.axis_label ?? "");
}

/**
 * `item` (a Bokeh JSON item, changed in place and returned) with integer ticks on its step axes:
 * a BasicTicker whose interval is at least 1 and without minor ticks. An axis given a ticker by
 * the kernel keeps it.
 */
export function integerStepTicks(item) {
  for (const model of modelsOf(item?.doc?.roots)) {
    if (!isStepAxis(model) || model.attributes.ticker) continue;
    model.attributes.ticker = {
      type: "object", name: "BasicTicker", id: `${model.id}-steps`,
      attributes: { min_interval: 1, num_minor_ticks: 0 },
    };
  }
  return item;
}
