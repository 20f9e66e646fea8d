"""The pod viewer: each step of every core split by the step breakdown the Input Pipeline
reads too; the bottleneck; stragglers among hosts of a multi-host run; the widget's report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import STEP_PARTS, input_pipeline_part
from xprof_widgets.analysis.pod_viewer import (
    PARTS,
    STRAGGLER_RATIO,
    analyze_pod_viewer,
    pod_viewer_available,
)
from xprof_widgets.widgets.pod_viewer import ratio_colors, report

DATA = Path(__file__).parents[1] / "data"
US = 1_000_000


def host_file(step_us: list[float], compile_at: float | None = None) -> bytes:
    """One CPU host: `train` steps (100 us apart plus their length) on `python`, each with a
    dispatch child for 10% of it, and an XLA op thread busy for half of each step."""
    python, xla, t = [], [], 0.0
    for k, length in enumerate(step_us):
        python.append(("train", int(t * US), int(length * US), {"_r": 1, "step_num": k}))
        python.append(("PjitFunction(step)", int((t + 1) * US), int(length * 0.1 * US), {}))
        xla.append(("fusion", int((t + length * 0.2) * US), int(length * 0.5 * US),
                    {"hlo_op": "fusion", "hlo_module": "jit_step"}))
        t += length + 100
    if compile_at is not None:
        python.append(("XlaCompile", int(compile_at * US), int(50 * US), {}))
    python.sort(key=lambda e: (e[1], -e[2]))
    return build_xspace([{"name": "/host:CPU", "lines": [
        {"name": "python", "events": python}, {"name": "tf_XLAEigen/1", "events": xla}]}])


def test_parts_agree_with_the_input_pipeline(tmp_path):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(host_file([1000, 1000, 1000], compile_at=2310))
    profile = xw.open_profile(path)
    rows = analyze_pod_viewer(profile).rows
    assert rows["step"].tolist() == [0, 1, 2] and rows["core"].tolist() == ["/host:CPU"] * 3
    total = rows[list(PARTS)].sum(axis=1)
    assert np.allclose(total, rows["duration_us"])
    units = input_pipeline_part(profile, r"(?!)").unit_steps
    ours = analyze_pod_viewer(profile, r"(?!)").rows
    for part in STEP_PARTS:  # one breakdown: the Input Pipeline's parts are the Pod Viewer's
        assert np.array_equal(ours[part], units[part] / US)
    first = rows.iloc[0]
    # No device: the dispatch (1-101) and the XLA op (200-700) are host compute
    assert first["compute_us"] == 0 and first["host_compute_us"] == pytest.approx(100 + 500)
    assert first["bottleneck"] == "Host compute"
    assert rows.iloc[2]["compile_us"] == pytest.approx(50)  # compiling inside step 2
    assert rows["compile_us"].iloc[:2].eq(0).all()


def test_stragglers_among_hosts(tmp_path, make_logdir):
    normal = host_file([1000, 1000, 1000, 1000])
    slow = host_file([1000, 1000, 2000, 1000])
    logdir = make_logdir({"2026_01_01_00_00_00": {"a.xplane.pb": normal, "b.xplane.pb": normal,
                                                   "c.xplane.pb": slow}})
    analysis = analyze_pod_viewer(xw.open_profile(logdir))
    assert analysis.hosts == ["a", "b", "c"]
    hosts = analysis.by_host()
    flagged = hosts[hosts["straggler"]]
    assert flagged[["step", "host"]].values.tolist() == [[2, "c"]]
    assert flagged["duration_us"].iat[0] > STRAGGLER_RATIO * flagged["step_median_us"].iat[0]
    steps = analysis.steps()
    assert steps["straggler_hosts"].tolist() == [0, 0, 1, 0]
    assert steps.loc[steps["step"] == 2, "host"].iat[0] == "c"  # the step's slowest core
    content = report(analysis)
    assert content["summary"]["by"] == "host" and content["summary"]["straggling_hosts"] == 1
    assert set(content["charts"]) == {"heatmap", "hosts", "breakdown"}
    # A CPU run: the table shows the parts that hold time, in the breakdown's order
    assert [p["key"] for p in content["parts"]] == ["host_compute_us", "other_us"]
    per_host = analysis.host_breakdown().set_index("host")
    assert per_host["straggling_steps"].to_dict() == {"a": 0, "b": 0, "c": 1}
    assert per_host.loc["c", "duration_us"] > per_host.loc["a", "duration_us"]


def test_fixtures_and_no_steps():
    tpu = analyze_pod_viewer(xw.open_profile(DATA / "synthetic_tpu.xplane.pb"))
    assert tpu.rows["core"].nunique() == 4 and tpu.rows["step"].nunique() == 63
    assert tpu.rows["collectives_us"].gt(0).any()  # the synthetic program's all-reduces
    gpu = analyze_pod_viewer(xw.open_profile(DATA / "synthetic_gpu.xplane.pb"))
    assert gpu.rows["output_us"].gt(0).any()  # device-to-host copies
    none = xw.open_profile(DATA / "tpu_v6e_inference.xplane.pb")
    assert not pod_viewer_available(none)
    assert "No training steps" in report(analyze_pod_viewer(none))["message"]
    assert tuple(PARTS) == tuple(STEP_PARTS)


def test_widget_and_colours(tmp_path):
    pv = xw.PodViewer(DATA / "tf_keras_cpu_slow_map.xplane.pb")
    frame = pv.to_dataframe()
    assert len(frame) == 12 and (frame["bottleneck"] == "Input").all()
    assert len(pv.steps()) == 12 and len(pv.by_host()) == 12
    pv.to_csv(tmp_path / "pod.csv")
    assert (tmp_path / "pod.csv").read_text().startswith("step,name,host,core")
    content = pv._call("report", {})[0]
    assert content["summary"]["by"] == "core" and content["summary"]["bottleneck"] == "Input"
    assert ratio_colors(np.array([0.5, 1.0, 1.0001, 1.25, 9.0])) == [
        "#e3eaf4", "#e3eaf4", "#fdd4cc", "#cb181d", "#cb181d"]
