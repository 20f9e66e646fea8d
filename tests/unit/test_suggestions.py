"""XProf's smart-suggestion rules (analysis/suggestions.py): each fires past its threshold and
not at it, on signals; and on profiles, where a fixture or a small built one has the signal."""

from __future__ import annotations

from pathlib import Path

import pytest
from xspace_builder import open_planes

import xprof_widgets as xw
from xprof_widgets.analysis import suggestions as sg
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.analysis.overview import INPUT_VERDICT_RULE, RULES_OURS, overview

DATA = Path(__file__).parents[1] / "data"
US = 1_000_000
EPS = 1e-9


def fired(signals: sg.Signals) -> set[str]:
    return {s["rule"] for s in sg.suggestions(signals)}


def profile_signals(profile) -> sg.Signals:
    try:
        ops = analyze_op_profile(profile)
    except xw.ProfileError:
        ops = None
    return sg.signals(profile, analyze_input_pipeline(profile), ops)


# ---- each rule at its threshold -------------------------------------------------------------
HIGH, LOW = sg.UTILIZATION_HIGH_PCT, sg.UTILIZATION_LOW_PCT


@pytest.mark.parametrize(("rule", "at_edge", "past_edge"), [
    ("ComputeBoundRule", sg.Signals(compute_utilization_pct=HIGH, memory_utilization_pct=10),
     sg.Signals(compute_utilization_pct=HIGH + EPS, memory_utilization_pct=LOW - EPS)),
    ("ComputeBoundRule", sg.Signals(compute_utilization_pct=90, memory_utilization_pct=LOW),
     sg.Signals(compute_utilization_pct=90, memory_utilization_pct=LOW - EPS)),
    ("MemoryBoundRule", sg.Signals(memory_utilization_pct=HIGH, compute_utilization_pct=10),
     sg.Signals(memory_utilization_pct=HIGH + EPS, compute_utilization_pct=LOW - EPS)),
    ("MemoryBoundRule", sg.Signals(memory_utilization_pct=90, compute_utilization_pct=LOW),
     sg.Signals(memory_utilization_pct=90, compute_utilization_pct=LOW - EPS)),
    ("InputBoundRule",
     sg.Signals(input_pct=sg.INPUT_PCT, enqueue_pct_of_input=0, non_enqueue_pct_of_input=0),
     sg.Signals(input_pct=sg.INPUT_PCT + EPS, enqueue_pct_of_input=0,
                non_enqueue_pct_of_input=0)),
    ("HostProcessingBoundRule",
     sg.Signals(input_pct=50, enqueue_pct_of_input=50 + EPS,
                non_enqueue_pct_of_input=sg.HOST_PROCESSING_PCT - EPS),
     sg.Signals(input_pct=50, enqueue_pct_of_input=50,
                non_enqueue_pct_of_input=sg.HOST_PROCESSING_PCT)),
    ("HostProcessingBoundRule",
     sg.Signals(input_pct=sg.INPUT_PCT, enqueue_pct_of_input=0, non_enqueue_pct_of_input=100),
     sg.Signals(input_pct=sg.INPUT_PCT + EPS, enqueue_pct_of_input=0,
                non_enqueue_pct_of_input=100)),
    ("DataTransferBoundRule",
     sg.Signals(input_pct=50, enqueue_pct_of_input=sg.DATA_TRANSFER_PCT - EPS,
                non_enqueue_pct_of_input=70 + EPS),
     sg.Signals(input_pct=50, enqueue_pct_of_input=sg.DATA_TRANSFER_PCT,
                non_enqueue_pct_of_input=70)),
    ("CollectiveBoundRule", sg.Signals(collective_pct=sg.COLLECTIVE_PCT - EPS),
     sg.Signals(collective_pct=sg.COLLECTIVE_PCT)),
    ("SparseCoreBoundRule",
     sg.Signals(compute_utilization_pct=10, memory_utilization_pct=10,
                sparse_core_pct=sg.SPARSE_CORE_PCT),
     sg.Signals(compute_utilization_pct=10, memory_utilization_pct=10,
                sparse_core_pct=sg.SPARSE_CORE_PCT + EPS)),
    ("SparseCoreBoundRule",  # not latency-bound: memory at the low threshold
     sg.Signals(compute_utilization_pct=10, memory_utilization_pct=LOW, sparse_core_pct=90),
     sg.Signals(compute_utilization_pct=10, memory_utilization_pct=LOW - EPS,
                sparse_core_pct=90)),
    ("TensorCoreIdleBoundRule",
     sg.Signals(compute_utilization_pct=10, memory_utilization_pct=10,
                tensor_core_idle_pct=sg.TENSOR_CORE_IDLE_PCT),
     sg.Signals(compute_utilization_pct=10, memory_utilization_pct=10,
                tensor_core_idle_pct=sg.TENSOR_CORE_IDLE_PCT + EPS)),
    ("TensorCoreIdleBoundRule",  # not latency-bound: compute at the low threshold
     sg.Signals(compute_utilization_pct=LOW, memory_utilization_pct=10, tensor_core_idle_pct=90),
     sg.Signals(compute_utilization_pct=LOW - EPS, memory_utilization_pct=10,
                tensor_core_idle_pct=90)),
])
def test_each_rule_fires_past_its_threshold_only(rule, at_edge, past_edge):
    assert rule not in fired(at_edge)
    assert rule in fired(past_edge)


def test_xprofs_thresholds():
    assert (HIGH, LOW, sg.INPUT_PCT, sg.HOST_PROCESSING_PCT, sg.DATA_TRANSFER_PCT,
            sg.COLLECTIVE_PCT, sg.SPARSE_CORE_PCT, sg.TENSOR_CORE_IDLE_PCT) == (
        70, 50, 10, 50, 30, 30, 10, 10)  # xprof/convert/smart_suggestion/constants.h


def test_a_signal_the_profile_lacks_fires_nothing():
    assert fired(sg.Signals()) == set()
    assert fired(sg.Signals(compute_utilization_pct=99)) == set()  # no bandwidth figure


def test_every_suggestion_names_its_rule_and_tool():
    names = [r.name for r in sg.RULES]
    assert len(set(names)) == len(names) == 8
    everything = sg.Signals(compute_utilization_pct=90, memory_utilization_pct=10, input_pct=90,
                            enqueue_pct_of_input=40, non_enqueue_pct_of_input=60,
                            collective_pct=40)
    out = sg.suggestions(everything)
    assert {s["rule"] for s in out} == {"ComputeBoundRule", "HostProcessingBoundRule",
                                        "DataTransferBoundRule", "CollectiveBoundRule"}
    assert all(set(s) == {"text", "tool", "rule"} and s["text"] for s in out)
    host = next(s["text"] for s in out if s["rule"] == "HostProcessingBoundRule")
    assert "54.0% of step time" in host  # 90% input x 60% of it not enqueue


# ---- on profiles ------------------------------------------------------------------------------
def test_a_slow_tf_data_map_is_host_processing_bound_a_fast_one_not():
    slow = profile_signals(xw.open_profile(DATA / "tf_keras_cpu_slow_map.xplane.pb"))
    assert slow.input_pct == pytest.approx(76.1, abs=0.1)
    assert slow.non_enqueue_pct_of_input == 100
    assert fired(slow) == {"HostProcessingBoundRule"}
    fast = profile_signals(xw.open_profile(DATA / "tf_keras_cpu_fast.xplane.pb"))
    assert fast.input_pct < sg.INPUT_PCT and fired(fast) == set()


def tpu_with_peaks(tflops: float, gbps: float) -> sg.Signals:
    """The synthetic TPU run (918 TFLOP/s and 1638.4 GB/s a core by its device) measured
    against other peaks, as `analyze_op_profile(peak_tflops=, peak_gbps=)` takes them."""
    profile = xw.open_profile(DATA / "synthetic_tpu.xplane.pb")
    return sg.signals(profile, analyze_input_pipeline(profile),
                      analyze_op_profile(profile, peak_tflops=tflops, peak_gbps=gbps))


def test_the_utilization_rules_on_the_tpu_run_at_its_own_and_at_other_peaks():
    own = profile_signals(xw.open_profile(DATA / "synthetic_tpu.xplane.pb"))
    assert own.compute_utilization_pct == pytest.approx(30.2, abs=0.05)
    assert own.memory_utilization_pct == pytest.approx(57.6, abs=0.05)  # neither bound
    assert not fired(own) & {"ComputeBoundRule", "MemoryBoundRule", "TensorCoreIdleBoundRule"}
    compute = tpu_with_peaks(918 * 30.2 / 80, 1638.4 * 2)  # 80% of the FLOPs, 29% of bytes
    assert fired(compute) >= {"ComputeBoundRule"}
    memory = tpu_with_peaks(918, 1638.4 * 57.6 / 80)  # 30% of the FLOPs, 80% of the bytes
    assert "MemoryBoundRule" in fired(memory) and "ComputeBoundRule" not in fired(memory)
    latency = tpu_with_peaks(918, 1638.4 * 2)  # 30% and 29%: latency-bound, idle 25.8%
    assert latency.latency_bound and "TensorCoreIdleBoundRule" in fired(latency)


def test_a_utilization_at_its_cap_is_no_measurement():
    """The cost model's bytes on the JAX MI300X elementwise program exceed the peak in their
    time (capped at 100%, as XProf caps): no memory-bound advice from that."""
    path = next((DATA / "public" / "tracelens").glob("jax08_mi300_elementwise/*.xplane.pb"))
    ops = analyze_op_profile(xw.open_profile(path))
    assert ops.overview()["bandwidth_utilization"] == 1.0
    signals = profile_signals(xw.open_profile(path))
    assert signals.memory_utilization_pct is None and "MemoryBoundRule" not in fired(signals)


def host_run(step_ops: list[tuple[str, int]], device_ops: list[tuple[str, int]] = ()):
    """Eight host-marked steps of 100 us; in each, host ops (name, us) one after the other, and
    on a GPU the device ops (name, us) one after the other."""
    host, device = [], []
    for k in range(8):
        t = 1000 + 200 * k
        host.append(("train", t * US, 100 * US, {"_r": 1, "step_num": k}))
        start = t + 1
        for name, us in step_ops:
            host.append((name, start * US, us * US, {}))
            start += us
        start = t + 1
        for name, us in device_ops:
            device.append((name, start * US, us * US, {}))
            start += us
    planes = [{"name": "/host:CPU", "lines": [{"name": "python", "events": host}]}]
    if device_ops:
        planes.append({"name": "/device:GPU:0", "lines": [{"name": "Stream #1", "events": device}]})
    return open_planes(planes)


def test_an_input_bound_run_whose_input_is_all_transfers_is_data_transfer_bound():
    copies = profile_signals(host_run([("DevicePut", 40), ("matmul", 40)]))
    assert copies.input_pct > sg.INPUT_PCT and copies.enqueue_pct_of_input == 100
    assert "DataTransferBoundRule" in fired(copies)
    assert "HostProcessingBoundRule" not in fired(copies)
    reads = profile_signals(host_run([("load_batch", 40), ("matmul", 40)]))
    assert "DataTransferBoundRule" not in fired(reads)
    assert "HostProcessingBoundRule" in fired(reads)


def test_input_time_without_host_input_ops_is_the_input_bound_rule():
    """A device waiting in its infeed while no host op is recognised as input."""
    waits = profile_signals(host_run([("matmul", 40)], [("infeed.1", 50), ("fusion.2", 40)]))
    assert waits.input_pct > sg.INPUT_PCT
    assert waits.enqueue_pct_of_input == waits.non_enqueue_pct_of_input == 0
    assert "InputBoundRule" in fired(waits)
    computes = profile_signals(host_run([("matmul", 40)], [("fusion.2", 90)]))
    assert "InputBoundRule" not in fired(computes)


def test_collectives_over_30_percent_of_each_step_are_collective_bound():
    # a host-marked step's period is 200 us here: its marker and the wait before it
    talks = profile_signals(host_run([("matmul", 40)], [("all-reduce.1", 70), ("fusion.2", 20)]))
    assert talks.collective_pct >= sg.COLLECTIVE_PCT
    assert "CollectiveBoundRule" in fired(talks)
    quiet = profile_signals(host_run([("matmul", 40)], [("all-reduce.1", 10), ("fusion.2", 80)]))
    assert quiet.collective_pct < sg.COLLECTIVE_PCT
    assert "CollectiveBoundRule" not in fired(quiet)


def test_tensor_core_idle_is_measured_on_tpu_steps_only():
    tpu = profile_signals(xw.open_profile(DATA / "synthetic_tpu.xplane.pb"))
    assert tpu.tensor_core_idle_pct == pytest.approx(25.8, abs=0.05)
    for name in ("synthetic_gpu.xplane.pb", "tf_keras_cpu_fast.xplane.pb"):
        assert profile_signals(xw.open_profile(DATA / name)).tensor_core_idle_pct is None


def test_sparse_core_time_comes_from_its_step_lines(tmp_path):
    def tpu(sc_us: int):
        steps = [(str(k), (1000 + 100 * k) * US, 90 * US, {"group_id": k}) for k in range(4)]
        ops = [("fusion.1", (1000 + 100 * k) * US, 60 * US, {}) for k in range(4)]
        sc = [(str(k), (1000 + 100 * k) * US, sc_us * US, {"group_id": k}) for k in range(4)]
        return open_planes([
            {"name": "/device:TPU:0", "lines": [{"name": "Steps", "events": steps},
                                                {"name": "XLA Ops", "events": ops}]},
            {"name": "/device:TPU:0 SparseCore 0", "lines": [
                {"name": "Sparse Core Steps", "events": sc}]}], tmp_path, f"sc{sc_us}.xplane.pb")
    def measured(profile):  # peaks given: its ops count no FLOPs or bytes, so latency-bound
        return sg.signals(profile, analyze_input_pipeline(profile),
                          analyze_op_profile(profile, peak_tflops=1, peak_gbps=1))

    busy = measured(tpu(45))
    assert busy.latency_bound and busy.sparse_core_pct == pytest.approx(50)
    assert "SparseCoreBoundRule" in fired(busy)
    idle = measured(tpu(9))
    assert idle.sparse_core_pct == pytest.approx(10)  # at the threshold: not above it
    assert "SparseCoreBoundRule" not in fired(idle)
    assert profile_signals(xw.open_profile(DATA / "synthetic_tpu.xplane.pb")).sparse_core_pct \
        is None


# ---- in the Overview ---------------------------------------------------------------------------
def test_the_overview_names_each_recommendations_rule():
    slow = overview(xw.open_profile(DATA / "tf_keras_cpu_slow_map.xplane.pb"))
    rules = [r["rule"] for r in slow.recommendations]
    assert rules[0] == "HostProcessingBoundRule" and INPUT_VERDICT_RULE not in rules
    assert "'" in slow.recommendations[0]["text"]  # names the costliest input op
    known = {r.name for r in sg.RULES} | set(RULES_OURS)
    for name in ("tf_keras_cpu_fast.xplane.pb", "synthetic_tpu.xplane.pb",
                 "jax_cpu_demo.xplane.pb"):
        data = overview(xw.open_profile(DATA / name))
        assert all(set(r) == {"text", "tool", "rule"} and r["rule"] in known
                   for r in data.recommendations), name


def test_ours_stay_where_xprofs_rules_say_nothing():
    """The fast tf.data run is NOT input-bound: no XProf rule fires, our verdict stays."""
    fast = overview(xw.open_profile(DATA / "tf_keras_cpu_fast.xplane.pb"))
    assert [r["rule"] for r in fast.recommendations] == [INPUT_VERDICT_RULE]
    assert "NOT input-bound" in fast.recommendations[0]["text"]
