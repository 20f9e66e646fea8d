// The state every view starts with (its model and element, the AbortController its requests and
// chart draws stop on when the view goes, the chart views it drew, the root class its style keys
// on), the model events it listens to, and what its dispose does first.
export function startView(view, model, el, rootClass) {
  view.model = model;
  view.el = el;
  view.abort = new AbortController();
  view.views = [];
  view.disposed = false;
  el.classList.add(rootClass);
}

/** Listens to the model: [event, handler] pairs, or a handler for each trait's change; stopView
 * stops listening. */
export function listen(view, pairs) {
  view.listeners = [...(view.listeners ?? []), ...pairs];
  for (const [event, handler] of pairs) view.model.on(event, handler);
}

/** Calls `fn` when any of the traits changes (listen). */
export function onTraits(view, traits, fn) {
  listen(view, traits.map((trait) => [`change:${trait}`, fn]));
}

/** What a view's dispose does first: no answer drawn any more, its requests and chart draws
 * stopped (an AbortController, where it has one), no model events heard. */
export function stopView(view) {
  view.disposed = true;
  view.abort?.abort();
  for (const [event, handler] of view.listeners ?? []) view.model.off(event, handler);
  view.listeners = [];
}
