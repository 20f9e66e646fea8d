"""The utilization viewer and megascale stats are offered only where a profile carries TPU v6e
counter samples / DCN collectives (tests/data/xprof_counters), and refuse elsewhere with a
ProfileError naming the file and what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets import tools
from xprof_widgets.analysis.megascale_stats import _group_size, _transmitted
from xprof_widgets.synthetic.megascale import COLLECTIVES, collective_info

DATA = Path(__file__).parents[1] / "data"
OURS = {"utilization_viewer": DATA / "xprof_counters" / "synthetic_tpu_counters.xplane.pb",
        "megascale_stats": DATA / "xprof_counters" / "synthetic_megascale.xplane.pb"}
OTHERS = sorted(p for p in [*DATA.rglob("*.xplane.pb"), *DATA.glob("*.trace.json.gz"),
                            *DATA.glob("torch_*/*.json*")]
                if p.parent.name != "xprof_counters" and ".hlo." not in p.name
                and not p.name.startswith("key_averages"))


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: str(p.relative_to(DATA)))
def test_not_offered_on_other_profiles(path: Path) -> None:
    offered = {t.key for t in tools.offered(xw.open_profile(path))}
    assert not offered & set(OURS), path


@pytest.mark.parametrize(("key", "name", "missing"), [
    ("utilization_viewer", "UtilizationViewer", "no TPU performance-counter samples"),
    ("megascale_stats", "MegascaleStats", "no DCN collectives")])
def test_refused_with_what_is_missing(key: str, name: str, missing: str) -> None:
    path = DATA / "synthetic_tpu.xplane.pb"
    with pytest.raises(xw.ProfileError, match=missing) as caught:
        getattr(xw, name)(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("key", sorted(OURS))
def test_each_offered_on_its_own_profile_only(key: str) -> None:
    offered = {t.key for t in tools.offered(xw.open_profile(OURS[key]))}
    assert key in offered and not (set(OURS) - {key}) & offered


def test_widgets_answer_table_and_chart() -> None:
    uv = xw.UtilizationViewer(OURS["utilization_viewer"])
    answer = uv._rows()
    assert len(answer["rows"]["name"]) == len(uv.to_dataframe()) == 562
    assert answer["charts"][0]["item"]["doc"]["roots"]
    assert uv.by_unit()["name"].iloc[0] == "Scalar Unit"  # XProf's order
    ms = xw.MegascaleStats(OURS["megascale_stats"])
    assert list(ms.to_dataframe()["occurrences"]) == [5, 5, 5, 5]
    assert ms._rows()["charts"][0]["key"] == "stall"


def test_replica_groups_and_bytes() -> None:
    sizes = {c.transfer_type: _group_size(collective_info(c)) for c in COLLECTIVES}
    assert sizes == {"ALL_REDUCE": 4, "ALL_GATHER": 2, "ONE_TO_ONE": 1, "REDUCE_SCATTER": 0}
    assert _transmitted(1000, 4, "ALL_REDUCE") == 1500
    assert _transmitted(1000, 4, "ALL_GATHER") == 750
    assert _transmitted(1000, 3, "REDUCE_SCATTER") == 2000
    assert _transmitted(1000, 0, "ALL_REDUCE") == 0


@pytest.mark.parametrize(("kind", "key"), [("tpu_counters", "utilization_viewer"),
                                           ("megascale", "megascale_stats")])
def test_the_demo_command_writes_them(tmp_path, kind: str, key: str) -> None:
    from xprof_widgets.synthetic.__main__ import main

    out = tmp_path / f"{kind}.xplane.pb"
    main([str(out), "--events", "1", "--kind", kind])
    offered = {t.key for t in tools.offered(xw.open_profile(out))}
    assert key in offered


def test_counter_ids_are_the_headers() -> None:
    """Samples of xprof/utils/tpu_counter_ids_v6e.h and _v7x.h, from each family's far corner
    (every id the metrics read was checked against the headers when the bases were taken)."""
    from xprof_widgets.analysis.tpu_counter_ids import V6E, V7X

    assert [V6E.tc("CYCLES"), V6E.tc("XLU_BUSY_2"), V6E.vector(1, 15, "VEX_INSTRUCTION"),
            V6E.tec(0, 0, "CYCLES"), V6E.sequencer(1, "SMISC_INSTRUCTION"),
            V6E.hbm(1, 15, "PARTIAL_WRITE_REQ_PS1"), V6E.ici_insertions("WR")[1]] == [
        3257466888, 3257467552, 3565683704, 3490185224, 3576234032, 3084992560, 2953257304]
    assert [V7X.tc("MXU_BUSY_2", 1), V7X.pwr("LDIDT_DROOP_CLOCKS_SKIPPED", 1),
            V7X.vector(1, 15, "VRES_INSTRUCTION", 1), V7X.tec(1, 15, "TEC_SMISC_INSTRUCTION", 1),
            V7X.sequencer(1, "CYCLES"), V7X.hbm(3, 15, "WR_REQ_PS1", 1),
            V7X.ici_insertions("WR")[3]] == [
        3328745944, 3384361024, 3381280832, 3372376112, 2845184008, 3250852896, 3238547800]


def test_unreadable_replica_groups_raise_for_a_warning() -> None:
    with pytest.raises(ValueError, match="truncated"):
        _group_size(b"\x12\x09\x0a")  # an endpoint group said to be 9 bytes, 1 there
    assert _group_size(b"") == 0 and _group_size(None) == 0


def test_an_unreadable_group_is_a_warning_not_a_failure(tmp_path, monkeypatch) -> None:
    from xprof_widgets.analysis.megascale_stats import analyze_megascale
    from xprof_widgets.synthetic import megascale

    good = megascale.collective_info
    monkeypatch.setattr(megascale, "collective_info", lambda c: b"\x12\x09\x0a"
                        if c.transfer_type == "ALL_REDUCE" else good(c))
    profile = xw.open_profile(megascale.write_megascale_profile(tmp_path / "bad.xplane.pb"))
    table = analyze_megascale(profile).set_index("rendezvous")
    assert table.loc["all-reduce.1_dcn", "bytes_transmitted"] == 0
    assert table.loc["all-gather.2_dcn", "bytes_transmitted"] == 262144
    assert any("send.1's dcn_collective_info is unreadable" in w for w in profile.warnings)
