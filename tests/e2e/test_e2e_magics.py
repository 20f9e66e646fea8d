"""`%load_ext xprof_widgets` and `%%xprof` in a real JupyterLab: the profiled cell's trace draws."""

from __future__ import annotations

import harness
import pytest

READY = ".xw-trace-viewer[data-ready='1']"
LABEL_W, AXIS_H = 210, 30  # js/src/trace_viewer/layout.js: the label column and the time axis

PAINTED = """([x0, y0]) => {
  const canvas = document.querySelector(".xw-trace-viewer canvas");
  const dpr = canvas.width / canvas.clientWidth;
  const x = Math.ceil(x0 * dpr), y = Math.ceil(y0 * dpr);
  const data = canvas.getContext("2d").getImageData(x, y, canvas.width - x,
                                                    canvas.height - y).data;
  const bg = data.slice(0, 3).join(",");
  let painted = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (`${data[i]},${data[i + 1]},${data[i + 2]}` !== bg) painted++;
  }
  return painted;
}"""

STEPS_IN_LAST_CAPTURE = (  # the cell's StepTraceAnnotations in the profile the magic showed
    "import xprof_widgets as xw\n"
    "logdir, run = get_ipython().magics_manager.registry['XprofMagics'].last\n"
    "print(len(xw.open_profile(logdir, run=run).events(name=r'^e2e_train \\d+$')))"
)

CELLS = [
    "%load_ext xprof_widgets",
    "import jax, jax.numpy as jnp\n\n@jax.jit\ndef e2e_step(x):\n    return jnp.tanh(x @ x)\n",
    ("%%xprof --tool trace\n"
     "for step in range(3):\n"
     "    with jax.profiler.StepTraceAnnotation('e2e_train', step_num=step):\n"
     "        e2e_step(jnp.ones((128, 128))).block_until_ready()\n"),
]



@pytest.mark.e2e
def test_cell_magic_profiles_the_cell_and_draws_its_trace(lab):
    page = lab.open_and_run(lab.notebook("magic_cell.ipynb", CELLS))
    lab.wait_ready(page, READY, timeout=180)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(2)
    assert "xprof: profile " in cell.locator(".jp-OutputArea").inner_text()
    assert page.evaluate(PAINTED, [LABEL_W + 2, AXIS_H + 2]) > 100
    assert harness.run_in_kernel(page, STEPS_IN_LAST_CAPTURE).strip() == "3"
    harness.screenshot(cell.locator(".xw-trace-viewer"), "magic_cell_trace")
