"""Degrade, don't die: a derived row family or a plane header that fails is left out with a
warning naming the file, the plane and what is missing; everything else decodes unchanged."""

from __future__ import annotations

import itertools
import re
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.profile import xspace_derived
from xprof_widgets.profile.model import Profile
from xprof_widgets.profile.schema import XSpace
from xprof_widgets.profile.xspace import decode_xspace

DATA = Path(__file__).parents[1] / "data"
PUBLIC_GPU = (DATA / "public/xprof/gpu_tf_2020/plugins/profile/2020_12_23_gpu/"
              "34.83.195.179_6003.xplane.pb")
EVENT = ["section", "track", "kind", "name", "start_ps", "duration_ps", "depth"]


class Injected(RuntimeError):
    """The failure a test puts into one family."""


def decode(path: Path) -> Profile:
    """A fresh decode (no profile cache between the injected and the plain one), its derived
    rows made: a family fails when they are (Profile.derive_rows), not at the decode."""
    profile = Profile([decode_xspace(path.read_bytes(), str(path), path.stem)], source=str(path))
    before = list(profile.warnings)
    profile.derive_rows()
    assert profile.warnings[:len(before)] == before
    return profile


def slices(profile: Profile) -> pd.DataFrame:
    """Every event with its plane, track, name, absolute time, depth and metadata row."""
    tracks = profile.tracks
    track = profile.track_of(np.arange(profile.n_events))
    return pd.DataFrame({
        "section": tracks["section"].to_numpy()[track], "track": tracks["name"].to_numpy()[track],
        "kind": tracks["kind"].to_numpy()[track], "name": profile.display_names[profile.meta],
        "start_ps": profile.start_ps + profile.origin_ps, "duration_ps": profile.duration_ps,
        "depth": profile.depth.astype(np.int64), "meta": profile.meta})


def same(a: pd.DataFrame, b: pd.DataFrame, columns: list[str]) -> bool:
    """The same events (in any order) over the columns."""
    a, b = (f[columns].sort_values(columns).reset_index(drop=True) for f in (a, b))
    return a.equals(b)


def failing(monkeypatch, name: str, planes: int | None = None) -> None:
    """Makes xspace_derived's `name` fail after doing its work (so the metadata rows it made
    must be taken back): on every call, or on its first `planes` calls. Planes run on worker
    threads, so each call takes its number on entry (next() on a count is atomic)."""
    original = getattr(xspace_derived, name)
    calls = itertools.count(1)

    def fail(*args, **kwargs):
        call = next(calls)
        made = original(*args, **kwargs)
        if planes is None or call <= planes:
            raise Injected(f"{name} broke")
        return made

    monkeypatch.setattr(xspace_derived, name, fail)


def left_out(path: Path, function: str, plane: str, what: str) -> str:
    return f"{path}: plane {plane}: {what} were left out (Injected: {function} broke)"


def metadata_rows_of(events: pd.DataFrame) -> int:
    return events["meta"].nunique()


ROW_FAMILIES = [
    # (function, fixture, the rows' track names, what the warning says was left out)
    pytest.param("framework_rows", "tpu_v6e_inference.xplane.pb",
                 r"^(Framework Name Scope|Framework Ops|Source code)$",
                 "the Framework Name Scope, Framework Ops and Source code rows", id="framework"),
    pytest.param("host_offload_rows", "tpu_v6e_inference.xplane.pb",
                 r"^Host Offload Ops row \d+$", "the Host Offload Ops rows", id="host-offload"),
    pytest.param("gpu_stream_rows", "synthetic_gpu.xplane.pb", r"^XLA (Modules|Ops) - from #\d+$",
                 "the XLA Modules and XLA Ops rows", id="gpu-xla-rows"),
]


@pytest.mark.parametrize(("function", "fixture", "tracks", "what"), ROW_FAMILIES)
def test_a_failing_row_family_leaves_out_only_its_rows(monkeypatch, function, fixture, tracks,
                                                       what):
    plain = decode(DATA / fixture)
    events = slices(plain)
    family = events["track"].str.match(tracks)
    planes = sorted(set(events.loc[family, "section"]))
    assert len(planes) > 1, f"{fixture} should have {what} on several planes"
    failing(monkeypatch, function)
    profile = decode(DATA / fixture)
    assert profile.warnings == [left_out(DATA / fixture, function, p, what) for p in planes]
    assert same(slices(profile), events[~family], EVENT)
    assert len(profile.metadata) == len(plain.metadata) - metadata_rows_of(events[family])


@pytest.mark.parametrize(("function", "fixture", "tracks", "what"), ROW_FAMILIES)
def test_a_family_failing_on_one_plane_keeps_it_on_the_others(monkeypatch, function, fixture,
                                                              tracks, what):
    events = slices(decode(DATA / fixture))
    family = events["track"].str.match(tracks)
    failing(monkeypatch, function, planes=1)
    profile = decode(DATA / fixture)
    [warning] = profile.warnings
    lost = re.fullmatch(left_out(DATA / fixture, function, "(.*)", what)
                        .replace("(Injected", r"\(Injected").replace("broke)", r"broke\)"),
                        warning).group(1)
    assert lost in set(events.loc[family, "section"])
    assert same(slices(profile), events[~(family & (events["section"] == lost))], EVENT)


def test_failing_thread_pool_regions_leave_the_threads_events(monkeypatch):
    fixture = DATA / "tf_keras_cpu_slow_map.xplane.pb"
    plain = decode(fixture)
    events = slices(plain)
    region = events["name"] == "ThreadpoolListener::Region"
    assert region.any()
    failing(monkeypatch, "threadpool_regions")
    profile = decode(fixture)
    assert profile.warnings == [left_out(fixture, "threadpool_regions", "/host:CPU",
                                         "the thread-pool regions")]
    ours = slices(profile)
    # Without their regions the threads' events sit a level higher; nothing else changes.
    assert same(ours, events[~region], EVENT[:-1])
    threads = set(events.loc[region, "track"])
    assert same(ours[~ours["track"].isin(threads)], events[~events["track"].isin(threads)], EVENT)
    assert len(profile.metadata) == len(plain.metadata) - metadata_rows_of(events[region])


def test_failing_step_names_leave_the_steps_their_own_names(monkeypatch):
    fixture = DATA / "jax_cpu_demo.xplane.pb"
    plain = decode(fixture)
    events = slices(plain)
    failing(monkeypatch, "step_rows")
    profile = decode(fixture)
    assert profile.warnings == [left_out(fixture, "step_rows", "/host:CPU", "the step names")]
    ours = slices(profile)
    assert same(ours, events, [c for c in EVENT if c != "name"])
    named = events["name"].str.fullmatch(r"train \d+")
    assert named.sum() > 1 and not ours["name"].str.fullmatch(r"train \d+").any()
    assert same(ours[~named.to_numpy()], events[~named], EVENT)
    assert len(profile.metadata) == len(plain.metadata) - metadata_rows_of(events[named])


def test_the_public_tensorflow_gpu_profile_opens():
    """A GPU stream whose kernels carry no hlo_module gets no XLA rows, as in XProf."""
    profile = xw.open_profile(PUBLIC_GPU)
    assert profile.warnings == []
    assert not profile.tracks["name"].str.startswith("XLA ").any()


def test_an_unreadable_plane_header_leaves_out_that_plane(tmp_path):
    fixture = DATA / "tpu_v6e_inference.xplane.pb"
    space = XSpace.FromString(fixture.read_bytes())
    index = next(k for k, p in enumerate(space.planes) if p.name == "/host:CPU")
    space.planes[index].name = "@@@@@@@@@"  # made invalid UTF-8 on the wire, which upb refuses
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(space.SerializeToString().replace(b"@@@@@@@@@", b"\xff" * 9))
    profile = decode(path)
    [warning] = profile.warnings
    assert warning.startswith(f"{path}: plane {index} was left out with its events: its name or "
                              "metadata do not parse")
    events = slices(decode(fixture))
    others = events[events["section"] != "/host:CPU"]
    assert len(others) and same(slices(profile), others, EVENT[:-1] + ["depth"])


def test_a_counter_whose_stats_are_corrupt_keeps_its_samples_without_values(tmp_path):
    from xspace_builder import build_xspace

    data = build_xspace([{"name": "/device:TPU:0", "lines": [
        {"name": "_counters_", "events": [("hbm", 0, 0, {"value": 3.5}),
                                           ("power", 5, 0, {"value": 1.25})]},
        {"name": "XLA Ops", "events": [("fusion", 0, 10, {})]}]}])
    value = struct.pack("<d", 1.25)
    assert data.count(b"\x11" + value) == 1
    path = tmp_path / "c.xplane.pb"
    path.write_bytes(data.replace(b"\x11" + value, b"\x0f" + value))  # wire type 7: no such type
    profile = decode(path)
    [warning] = profile.warnings
    assert warning.startswith(f"{path}: plane /device:TPU:0: the values of counter power were "
                              "left out (event stats are corrupt")
    events = profile.events()
    assert events["name"].tolist() == ["hbm", "power", "fusion"]
    values = profile.counter_values(events["event"].to_numpy())
    assert values[0] == 3.5 and np.isnan(values[1:]).all()
