"""Print XProf's input-pipeline verdict for xplane fixtures.

Run with the repo venv (it has xprof 2.24.2):

  .venv/bin/python tests/data/make/xprof_input_pipeline.py tests/data/FILE.xplane.pb [...]

Copies each file into a temp logdir as T/plugins/profile/run1/host.xplane.pb,
runs xprof.convert.raw_to_tool_data.xspace_to_tool_data(..,
"input_pipeline_analyzer", {}) and prints the verdict, the input percent and
the number of steps. Writes nothing into the repo.
"""
import json
import os as _os

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
_os.environ.setdefault("GLOG_minloglevel", "2")
import os
import shutil
import sys
import tempfile

from xprof.convert import raw_to_tool_data as r


def analyze(path):
    tmp = tempfile.mkdtemp(prefix="fx-ipa-")
    try:
        run = os.path.join(tmp, "plugins", "profile", "run1")
        os.makedirs(run)
        dst = os.path.join(run, "host.xplane.pb")
        shutil.copyfile(path, dst)
        data, _ = r.xspace_to_tool_data([dst], "input_pipeline_analyzer", {})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if isinstance(data, bytes):
        data = data.decode()
    return json.loads(data)


def summary(doc):
    tables = doc if isinstance(doc, list) else [doc]
    out = {}
    for t in tables:
        p = t.get("p", {})
        for k in ("summary_conclusion", "input_conclusion", "summary_nextstep",
                  "hardware_type", "steptime_ms_average", "infeed_percent_average",
                  "input_percent", "output_percent", "idle_percent",
                  "compute_percent", "steptime_ms_minimum", "steptime_ms_maximum"):
            if k in p and k not in out:
                out[k] = p[k]
    # the step table is the first one with a "stepnum" column
    for t in tables:
        cols = [c.get("id") for c in t.get("cols", [])]
        if "stepnum" in cols:
            out["steps"] = len(t.get("rows", []))
            out["step_cols"] = cols
            out["step_rows"] = [[c.get("v") for c in row["c"]] for row in t["rows"]]
            break
    return out


if __name__ == "__main__":
    for path in sys.argv[1:]:
        s = summary(analyze(path))
        print("==", path)
        for k, v in s.items():
            if k == "step_rows":
                for row in v:
                    print("   ", row)
            else:
                print(f"  {k}: {v}")
