// The state every view starts with: its model and element, the AbortController its requests and
// chart draws stop on when the view goes, the chart views it drew (cleared when it goes) and the
// root class its style keys on.
export function startView(view, model, el, rootClass) {
  view.model = model;
  view.el = el;
  view.abort = new AbortController();
  view.views = [];
  view.disposed = false;
  el.classList.add(rootClass);
}
