"""The XSpace decoder against upb's own parse, and its handling of what real files contain."""

from __future__ import annotations

import numpy as np
import pytest
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.profile.schema import XSpace

pytestmark = pytest.mark.decoding


def reference_events(data: bytes) -> list[tuple]:
    """Every event as (plane, line, name, absolute ps, duration ps), via the upb message tree."""
    out = []
    for plane in XSpace.FromString(data).planes:
        for line in plane.lines:
            for ev in line.events:
                name = plane.event_metadata[ev.metadata_id].name
                out.append((plane.name, line.display_name or line.name, name,
                            line.timestamp_ns * 1000 + ev.offset_ps, ev.duration_ps))
    return out


def decoded_events(profile) -> list[tuple]:
    names = profile.metadata["name"].to_numpy()
    out = []
    origin_ps = round(profile.origin_ns * 1000)
    for tid, track in profile.tracks.iterrows():
        for i in range(track.first_event, track.end_event):
            if profile.derived[i]:  # made from the file's events, as XProf derives rows
                continue
            out.append((track["section"], track["name"], names[profile.meta[i]],
                        int(profile.start_ps[i]) + origin_ps, int(profile.duration_ps[i])))
    return out


def test_every_event_of_the_tpu_fixture_matches_upb(tpu_path):
    data = tpu_path.read_bytes()
    profile = xw.open_profile(tpu_path)
    assert sorted(decoded_events(profile)) == sorted(reference_events(data))
    assert int((~profile.derived).sum()) == 26723


def test_sections_in_xprof_order_with_device_lines_first(tpu_path):
    profile = xw.open_profile(tpu_path)
    sections = list(dict.fromkeys(profile.tracks["section"]))
    assert sections == ["/device:TPU:0", "/device:TPU:1", "/device:TPU:2", "/device:TPU:3",
                        "/host:CPU"]
    tpu0 = profile.tracks[profile.tracks["section"] == "/device:TPU:0"]["name"].tolist()
    assert tpu0 == ["XLA Modules", "XLA Ops", "Async XLA Ops", "XLA TraceMe",
                    "Framework Name Scope", "Framework Ops", "Source code",
                    *[f"Host Offload Ops row {k}" for k in range(4)]]  # from Framework: derived


def test_times_are_relative_to_the_first_event(tpu_path):
    profile = xw.open_profile(tpu_path)
    assert profile.start_ps.min() == 0
    assert profile.start_ps.dtype == np.int64 and profile.duration_ps.dtype == np.int64


def test_events_within_a_track_are_ordered_and_nested(tpu_path):
    profile = xw.open_profile(tpu_path)
    for _, track in profile.tracks.iterrows():
        s = profile.start_ps[track.first_event:track.end_event]
        assert np.all(np.diff(s) >= 0)
    main = profile.events(track="main/3116817")
    assert main["depth"].max() == 10


def test_metadata_stats_and_short_names(tpu_path):
    profile = xw.open_profile(tpu_path)
    ops = profile.events(track="/device:TPU:0/XLA Ops")
    first = int(ops["event"].iloc[1])
    full = profile.metadata["name"].iat[int(profile.meta[first])]
    assert full.startswith("%") and " = " in full  # full HLO text kept
    assert ops["name"].iloc[1] and " = " not in ops["name"].iloc[1]
    stats = profile.metadata_stats(first)
    assert {"hlo_category", "flops", "bytes_accessed"} <= set(stats)


def test_event_stats_resolve_refs_and_unpack_flows(tpu_path):
    profile = xw.open_profile(tpu_path)
    idx = profile.event_indices(track="/device:TPU:0/Async XLA Ops")
    stats = profile.event_stats(idx[0])
    assert isinstance(stats["hlo_op"], str)  # a ref value, resolved
    assert set(stats["flow"]) == {"id", "direction", "category"}
    column = profile.stat_column(idx[:50], "flow")
    assert [c["id"] for c in column[:3]] == [profile.event_stats(i)["flow"]["id"] for i in idx[:3]]
    assert profile.stat_column(idx[:5], "no such stat").tolist() == [None] * 5


def test_stat_column_reads_every_value_kind(tmp_path):
    data = build_xspace([{"name": "/host:CPU", "lines": [{"name": "t", "events": [
        ("a", 0, 10, {"i": -5, "u": 7, "d": 1.5, "s": "text", "b": b"\x00\x01", "r": ("ref", "op")}),
        ("b", 20, 10, {}),
    ]}]}])
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(data)
    profile = xw.open_profile(path)
    events = np.array([0, 1])
    assert profile.stat_column(events, "i").tolist() == [-5, None]
    assert profile.stat_column(events, "u").tolist() == [7, None]
    assert profile.stat_column(events, "d").tolist() == [1.5, None]
    assert profile.stat_column(events, "s").tolist() == ["text", None]
    assert profile.stat_column(events, "b").tolist() == [b"\x00\x01", None]
    assert profile.stat_column(events, "r").tolist() == ["op", None]
    assert profile.event_stats(0) == {"i": -5, "u": 7, "d": 1.5, "s": "text", "b": b"\x00\x01",
                                      "r": "op"}


def test_unsorted_and_nested_events_get_ordered_with_depths(tmp_path):
    data = build_xspace([{"name": "/host:CPU", "lines": [{"name": "t", "timestamp_ns": 5,
                                                          "events": [
        ("child2", 60, 20, {}), ("parent", 0, 100, {}), ("child1", 10, 30, {}),
        ("grandchild", 15, 5, {}), ("zero", 100, 0, {}), ("after", 100, 10, {}),
    ]}]}])
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(data)
    ev = xw.open_profile(path).events()
    assert ev["name"].tolist() == ["parent", "child1", "grandchild", "child2", "after", "zero"]
    assert ev["depth"].tolist() == [0, 1, 2, 1, 0, 1]
    assert ev["start_us"].tolist() == pytest.approx([0, 1e-5, 1.5e-5, 6e-5, 1e-4, 1e-4])


def test_html_in_names_is_kept_verbatim(tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(build_xspace([{"name": "/host:CPU", "lines": [
        {"name": evil, "events": [(evil, 0, 10, {})]}]}]))
    profile = xw.open_profile(path)
    assert profile.tracks["name"].tolist() == [evil]
    assert profile.events()["name"].tolist() == [evil]


def test_epoch_timestamps_do_not_overflow(tmp_path):
    epoch_ns = 1_764_400_000_000_000_000
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(build_xspace([{"name": "/host:CPU", "lines": [
        {"name": "a", "timestamp_ns": epoch_ns, "events": [("x", 7, 3, {})]},
        {"name": "b", "timestamp_ns": epoch_ns + 2, "events": [("y", 1, 3, {})]}]}]))
    profile = xw.open_profile(path)
    assert profile.events()["start_us"].tolist() == pytest.approx([0.0, 0.001994])
    assert profile.origin_ns == pytest.approx(epoch_ns + 0.007)


def test_hlo_protos_are_listed_and_decoded_on_demand(tpu_path):
    profile = xw.open_profile(tpu_path)
    modules = profile.hlo_modules
    assert sorted(modules["name"]) == ["jit__psum", "jit_broadcast_in_dim",
                                       "jit_convert_element_type", "jit_f"]
    proto = profile.hlo_proto("jit_f")
    assert proto.hlo_module.name == "jit_f"
    assert (modules["program_id"] > 0).all()  # uint64 like the ops' program_id stat
    assert 9646411105960254074 in set(modules["program_id"])  # >= 2**63
    assert profile.hlo_proto(int(modules["program_id"].iloc[0])).hlo_module.name
    with pytest.raises(xw.ProfileError, match="no HLO proto for module 'nope'.*jit_f"):
        profile.hlo_proto("nope")


def test_device_peaks_are_section_stats(tpu_path):
    profile = xw.open_profile(tpu_path)
    stats = profile.sections.set_index("name").loc["/device:TPU:0", "stats"]
    assert stats["device_type_string"] == "TPU v6 Lite"
    assert stats["peak_teraflops_per_second"] == pytest.approx(918, rel=0.01)


@pytest.mark.parametrize("cut", [1, 100, 5000, 500_000])
def test_truncated_files_raise_a_named_error(tmp_path, tpu_path, cut):
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(tpu_path.read_bytes()[:-cut])
    with pytest.raises(xw.ProfileError, match=r"cut\.xplane\.pb.*(truncated|corrupt)"):
        xw.open_profile(path)


def test_corrupt_and_empty_files_raise_named_errors(tmp_path):
    garbage = tmp_path / "garbage.xplane.pb"
    garbage.write_bytes(b"\xff" * 64)
    with pytest.raises(xw.ProfileError, match="garbage.xplane.pb"):
        xw.open_profile(garbage)
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    with pytest.raises(xw.ProfileError, match=r"empty\.xplane\.pb.*empty \(0 bytes\)"):
        xw.open_profile(empty)


def test_a_profile_without_events_says_so(tmp_path):
    path = tmp_path / "quiet.xplane.pb"
    path.write_bytes(build_xspace([{"name": "/host:CPU", "lines": [{"name": "t", "events": []}]},
                                   {"name": "Task Environment"}]))
    with pytest.raises(xw.ProfileError, match=r"quiet.*no events.*/host:CPU"):
        xw.open_profile(path)


def test_counter_lines_carry_values(tmp_path):
    path = tmp_path / "c.xplane.pb"
    path.write_bytes(build_xspace([{"name": "/device:TPU:0", "lines": [
        {"name": "_counters_", "events": [("hbm", 0, 0, {"value": 3.5}),
                                           ("hbm", 10, 0, {"value": 7})]}]}]))
    profile = xw.open_profile(path)
    assert profile.tracks["kind"].tolist() == ["counter"]
    assert profile.counter_values(np.array([0, 1])).tolist() == [3.5, 7.0]


def test_events_whose_metadata_is_missing_get_a_placeholder_name(tmp_path):
    space = XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "known"
    line = plane.lines.add(id=1, name="t")
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=5)
    line.events.add(metadata_id=99, offset_ps=10, duration_ps=5)
    line.events.add(metadata_id=99, offset_ps=20, duration_ps=5)
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(space.SerializeToString())
    assert xw.open_profile(path).events()["name"].tolist() == ["known", "<metadata 99>",
                                                               "<metadata 99>"]


def test_framework_rows_above_the_limit_are_left_out_with_a_warning(tpu_path, monkeypatch):
    from xprof_widgets.profile import xspace_derived

    monkeypatch.setattr(xspace_derived, "FRAMEWORK_ROWS_LIMIT", 1000)  # the fixture: 6,013 ops
    profile = xw.open_profile(tpu_path)
    assert "Framework Ops" not in set(profile.tracks["name"]) and not profile.derived.any()
    assert any("were not derived" in w and "XPROF_WIDGETS_FRAMEWORK_ROWS=always" in w
               for w in profile.warnings)
    monkeypatch.setenv("XPROF_WIDGETS_FRAMEWORK_ROWS", "always")
    assert "Framework Ops" in set(xw.open_profile(tpu_path).tracks["name"])
