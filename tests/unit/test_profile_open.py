"""Finding profiles behind a path: logdirs, runs, hosts, single files, URLs, and bad input."""

from __future__ import annotations

import gzip
import json
import os

import pytest

import xprof_widgets as xw

pytestmark = pytest.mark.decoding



def read_events(profile: xw.Profile) -> int:
    """Events read from the files, not those derived from them as XProf derives rows."""
    return int((~profile.derived).sum())

def test_a_single_file_opens(tpu_path):
    profile = xw.open_profile(tpu_path)
    assert profile.hosts == ["tpu_v6e_inference"]
    assert profile.run is None


def test_the_newest_run_is_the_default_and_runs_are_listed(make_logdir, tpu_path):
    logdir = make_logdir({"2026_11_28_10_00_00": {"old.xplane.pb": tpu_path},
                          "2026_11_29_16_19_11": {"new.xplane.pb": tpu_path}})
    profile = xw.open_profile(logdir)
    assert profile.run == "2026_11_29_16_19_11"
    assert profile.hosts == ["new"]
    assert profile.runs["run"].tolist() == ["2026_11_28_10_00_00", "2026_11_29_16_19_11"]
    assert profile.runs["hosts"].tolist() == [["old"], ["new"]]
    assert xw.open_profile(logdir, run="2026_11_28_10_00_00").hosts == ["old"]
    with pytest.raises(xw.ProfileError, match="no run 'nope'.*2026_11_28_10_00_00"):
        xw.open_profile(logdir, run="nope")


def test_a_multi_host_run_opens_all_hosts_or_the_chosen_ones(make_logdir, tpu_path):
    logdir = make_logdir({"r1": {"host_a.xplane.pb": tpu_path, "host_b.xplane.pb": tpu_path}})
    both = xw.open_profile(logdir)
    assert both.hosts == ["host_a", "host_b"]
    assert read_events(both) == 2 * 26723
    assert set(both.tracks["host"]) == {"host_a", "host_b"}
    assert both.tracks["host"].tolist() == sorted(both.tracks["host"])  # host is the top level
    second = both.events(track=both.tracks.index[both.tracks["host"] == "host_b"][0])
    first = both.events(track=0)
    assert second["start_us"].tolist() == first["start_us"].tolist()
    assert second["name"].tolist() == first["name"].tolist()
    assert xw.open_profile(logdir, host="host_b").hosts == ["host_b"]
    with pytest.raises(xw.ProfileError, match="no host.*host_c"):
        xw.open_profile(logdir, host=["host_c"])


def test_a_run_directory_opens_and_xspace_wins_over_its_trace_json(make_logdir, tpu_path):
    logdir = make_logdir({"r1": {"h.xplane.pb": tpu_path, "h.trace.json.gz": b"not read"}})
    run_dir = logdir / "plugins" / "profile" / "r1"
    profile = xw.open_profile(run_dir)
    assert profile.run == "r1" and read_events(profile) == 26723


def test_a_logdir_nested_one_level_down_is_found(tmp_path, tpu_path):
    run = tmp_path / "experiments" / "train" / "plugins" / "profile" / "r9"
    run.mkdir(parents=True)
    (run / "h.xplane.pb").write_bytes(tpu_path.read_bytes())
    assert xw.open_profile(tmp_path).run == "r9"


def test_missing_empty_and_fileless_logdirs_raise_named_errors(tmp_path, make_logdir):
    with pytest.raises(xw.ProfileError, match="nowhere.*no such file or directory"):
        xw.open_profile(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(xw.ProfileError, match="empty: no profile found.*jax.profiler.trace"):
        xw.open_profile(tmp_path / "empty")
    logdir = make_logdir({"2026_01_01": {"notes.txt": b"x"}})
    with pytest.raises(xw.ProfileError, match="found runs \\(2026_01_01\\) but none holds"):
        xw.open_profile(logdir)
    other = tmp_path / "profile.bin"
    other.write_bytes(b"x")
    with pytest.raises(xw.ProfileError, match="profile.bin: not a profile file"):
        xw.open_profile(other)


def test_opening_never_writes_into_the_logdir(make_logdir, tpu_path):
    logdir = make_logdir({"r1": {"h.xplane.pb": tpu_path}})
    before = sorted(p.relative_to(logdir) for p in logdir.rglob("*"))
    for p in logdir.rglob("*"):
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        xw.open_profile(logdir).hlo_proto("jit_f")
    finally:
        for p in logdir.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
    assert sorted(p.relative_to(logdir) for p in logdir.rglob("*")) == before


def test_fsspec_urls_open(tpu_path):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/logs/plugins/profile/2026_11_29/worker0.xplane.pb", tpu_path.read_bytes())
    profile = xw.open_profile("memory://logs")
    assert profile.run == "2026_11_29" and profile.hosts == ["worker0"]
    assert read_events(profile) == 26723
    single = xw.open_profile("memory://logs/plugins/profile/2026_11_29/worker0.xplane.pb")
    assert single.run == "2026_11_29"
    with pytest.raises(xw.ProfileError, match="memory://missing"):
        xw.open_profile("memory://missing")


def test_an_opened_profile_passes_through(tpu_path):
    profile = xw.open_profile(tpu_path)
    assert xw.open_profile(profile) is profile


@pytest.mark.parametrize("name, sections, n_events", [
    ("synthetic_tpu.xplane.pb", ["/device:TPU:0", "/device:TPU:1", "/device:TPU:2",
                                 "/device:TPU:3", "/host:CPU"], 19886),
    ("synthetic_gpu.xplane.pb", ["/device:GPU:0", "/device:GPU:1", "/device:GPU:2",
                                 "/device:GPU:3", "/host:CPU", "/host:CUPTI"], 19795),
    ("jax_cpu_demo.xplane.pb", ["/host:CPU"], None),
    ("jax_cpu_demo.trace.json.gz", None, None),
    ("torch_tiny_mlp.pt.trace.json.gz", None, 479),  # 477 X + 2 instant events
])
def test_every_committed_profile_opens(tpu_path, name, sections, n_events):
    profile = xw.open_profile(tpu_path.parent / name)
    if sections is not None:
        assert list(dict.fromkeys(profile.tracks["section"])) == sections
    if n_events is not None:
        assert read_events(profile) == n_events
    tracks = profile.tracks  # makes the derived rows first: the events then include theirs
    assert profile.n_events == tracks["n_events"].sum()
    assert (profile.duration_ps >= 0).all() and profile.start_ps.min() == 0


def test_the_jax_cpu_profile_has_steps_ops_and_hlo(tpu_path):
    profile = xw.open_profile(tpu_path.parent / "jax_cpu_demo.xplane.pb")
    train = profile.events(name=r"^train \d+$")  # step roots named as XProf: "<name> <step>"
    assert len(train) == 8
    assert sorted(profile.stat_column(train["event"].to_numpy(), "step_num")) == list(range(8))
    assert "jit_train_step" in set(profile.hlo_modules["name"])
    ops = profile.event_indices(track=[t for t in profile.tracks.index
                                       if profile.tracks.at[t, "name"].startswith("tf_XLA")])
    assert set(profile.stat_column(ops, "hlo_module")) >= {"jit_train_step"}


def test_the_torch_trace_has_flows_between_its_threads(tpu_path):
    profile = xw.open_profile(tpu_path.parent / "torch_tiny_mlp.pt.trace.json.gz")
    edges = profile.flow_edges()
    assert len(edges) == 28
    assert (profile.start_ps[edges[:, 0]] <= profile.start_ps[edges[:, 1]]).all()


# ---- Chrome traces recognised by content -------------------------------------------------------
TORCH = "torch_tiny_mlp.pt.trace.json.gz"


def _torch_json(tpu_path) -> bytes:
    return gzip.decompress((tpu_path.parent / TORCH).read_bytes())


@pytest.mark.parametrize("name, gzipped, host", [
    ("trace.json", False, "trace"),  # prof.export_chrome_trace("trace.json")
    ("rank-0.json.gz", True, "rank-0"),  # HTA's per-rank traces
    ("worker0.1700000000000.pt.trace.json", False, "worker0.1700000000000"),
    ("my trace", False, "my trace"),
    ("events.txt", False, "events"),
])
def test_a_chrome_trace_opens_whatever_its_name(tmp_path, tpu_path, name, gzipped, host):
    data = _torch_json(tpu_path)
    (tmp_path / name).write_bytes(gzip.compress(data) if gzipped else data)
    profile = xw.open_profile(tmp_path / name)
    assert profile.hosts == [host] and profile.n_events == 479


def test_a_json_array_of_events_opens_by_content(tmp_path):
    path = tmp_path / "events.json"
    path.write_text(json.dumps([{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 0, "tid": 0}]))
    assert xw.open_profile(path).events()["name"].tolist() == ["a"]


@pytest.mark.parametrize("content, message", [
    (b'{"a": 1}', r"a JSON object without a `traceEvents` list \(its keys: a\)"),
    (b"12", "the JSON document is a number, not a list of events"),
    (b'{"traceEvents": {"ph": "X"}}', "`traceEvents` is a JSON object, not a list"),
    (b'"text"', "the JSON document is a string"),
])
def test_json_that_is_not_a_trace_says_what_was_expected(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(xw.ProfileError, match=rf"config\.json: {message}.*"
                                              r'Expected a Chrome trace: \{"traceEvents": '
                                              r"\[\.\.\.\]\} or a JSON array of trace events"):
        xw.open_profile(path)


def test_a_directory_of_rank_traces_gives_a_host_per_rank(tmp_path, tpu_path):
    data = gzip.compress(_torch_json(tpu_path))
    for rank in (0, 1):
        (tmp_path / f"rank-{rank}.json.gz").write_bytes(data)
    (tmp_path / "config.json").write_text('{"lr": 0.1, "steps": 10}')
    (tmp_path / "numbers.json").write_text("[1, 2, 3]")
    profile = xw.open_profile(tmp_path)
    assert profile.hosts == ["rank 0", "rank 1"]  # ranks by name (profile/ranks.py)
    assert profile.n_events == 2 * 479
    assert profile.run == tmp_path.name


def test_a_directory_holding_trace_json_opens(tmp_path, tpu_path):
    (tmp_path / "trace.json").write_bytes(_torch_json(tpu_path))
    assert xw.open_profile(tmp_path).hosts == ["trace"]


def test_a_trace_whose_first_kib_is_device_properties_is_found(tmp_path, tpu_path):
    doc = json.loads(_torch_json(tpu_path))
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": i, "name": "NVIDIA H100 80GB HBM3",
                                                     "totalGlobalMem": 85e9, "padding": "x" * 300}
                                                    for i in range(8)], **doc}
    (tmp_path / "rank-3.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert xw.open_profile(tmp_path).hosts == ["rank-3"]


def test_a_directory_search_reads_only_the_start_of_other_json_files(tmp_path, tpu_path,
                                                                     monkeypatch):
    from xprof_widgets.profile import locate

    (tmp_path / "rank-0.json").write_bytes(_torch_json(tpu_path))
    big = tmp_path / "dataset_index.json"
    big.write_text(json.dumps({"files": ["x" * 100] * 200_000}))  # 20 MB, not a trace
    heads, reads = [], []
    head, read, mapped = locate.FileSystem.head, locate.FileSystem.read, locate.FileSystem.map
    monkeypatch.setattr(locate.FileSystem, "head",
                        lambda self, p, size=locate.SNIFF_BYTES: heads.append((p, size))
                        or head(self, p, size))
    monkeypatch.setattr(locate.FileSystem, "read", lambda self, p: reads.append(p) or read(self, p))
    monkeypatch.setattr(locate.FileSystem, "map", lambda self, p: reads.append(p) or mapped(self, p))
    assert xw.open_profile(tmp_path).hosts == ["rank-0"]
    assert sorted(os.path.basename(p) for p, _ in heads) == ["dataset_index.json", "rank-0.json"]
    assert all(size <= 4096 for _, size in heads)
    assert [os.path.basename(p) for p in reads] == ["rank-0.json"]


def test_a_directory_of_json_that_is_not_a_trace_is_no_profile(tmp_path):
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    (tmp_path / "metrics.json.gz").write_bytes(gzip.compress(b'[{"step": 1, "loss": 2.5}]'))
    with pytest.raises(xw.ProfileError, match=r"no profile found.*config\.json, metrics\.json\.gz"
                                              ": JSON but not a Chrome trace"):
        xw.open_profile(tmp_path)


def test_traces_in_nested_directories_without_plugins_profile_are_runs(tmp_path, tpu_path):
    data = _torch_json(tpu_path)
    for run in ("exp_a/2026_01_01", "exp_b/2026_01_02"):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "worker0.pt.trace.json").write_bytes(data)
    profile = xw.open_profile(tmp_path)
    assert profile.runs["run"].tolist() == ["exp_a/2026_01_01", "exp_b/2026_01_02"]
    assert profile.run == "exp_b/2026_01_02" and profile.hosts == ["worker0"]
    assert xw.open_profile(tmp_path, run="exp_a/2026_01_01").n_events == 479


def test_a_named_trace_and_xspace_of_one_host_in_a_run_keep_the_xspace(make_logdir, tpu_path):
    logdir = make_logdir({"r1": {"h.xplane.pb": tpu_path, "h.json": b'{"traceEvents": []}'}})
    assert read_events(xw.open_profile(logdir)) == 26723


@pytest.mark.parametrize("path, host", [
    ("torch_export", "trace"),  # prof.export_chrome_trace("trace.json")
    ("torch_export/trace.json", "trace"),
    ("torch_hta", "rank-0"),  # rank-0.json.gz
    ("torch_tb_handler", "worker0.1796115421816595431"),  # tensorboard_trace_handler's name
])
def test_real_pytorch_traces_open_by_file_or_directory(tpu_path, path, host):
    profile = xw.open_profile(tpu_path.parent / path)
    assert profile.hosts == [host]
    assert profile.warnings == []
    steps = profile.events(name=r"^ProfilerStep#\d$")
    assert steps["name"].tolist() == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    assert len(profile.flow_edges()) > 0
