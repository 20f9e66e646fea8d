"""Regenerates the XProf op-profile reference values the op profile tests compare against.

XProf (pip `xprof`, 2.24.2 when recorded) runs in its own virtual environment, never in the
project's:

    python -m venv /tmp/xprofvenv && /tmp/xprofvenv/bin/pip install xprof==2.24.2
    .venv/bin/python tests/bench/op_profile_xprof_reference.py --xprof-python /tmp/xprofvenv/bin/python

For each profile it copies the file into a temporary logdir (XProf writes its op-stats cache next
to the profile), asks XProf's offline converter for `op_profile` grouped by category and by
program (`xprof.convert.raw_to_tool_data.xspace_to_tool_data([path], "op_profile",
{"group_by": ...})`), and keeps what the tests check, in
tests/data/expected/op_profile_<name>.json:

- the root's total time (every core's span, idle included) and the IDLE node's time;
- per category and per program: time share of the total, FLOPS and HBM bandwidth utilization;
- per op (program id, name): occurrences, time, time share, FLOPS and bandwidth utilization,
  and the names of the fused instructions XProf lists under it.

XProf's JSON stores `metrics.flops` as utilization x time fraction (its UI divides it back);
this script stores the utilization itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPECTED = os.path.join(ROOT, "tests", "data", "expected")
PROFILES = {"tpu_v6e": os.path.join(ROOT, "tests", "data", "tpu_v6e_inference.xplane.pb")}

_RUN_XPROF = """
import json, sys
from xprof.convert import raw_to_tool_data
from importlib.metadata import version
path, group_by = sys.argv[1], sys.argv[2]
data, _ = raw_to_tool_data.xspace_to_tool_data([path], "op_profile", {"group_by": group_by})
sys.stdout.write(json.dumps({"version": version("xprof"),
                             "tree": json.loads(data.decode() if isinstance(data, bytes) else data)}))
"""


def xprof_python(explicit: str | None = None) -> str | None:
    """An interpreter that can import xprof (the given one, $XPROF_PYTHON, this one), or None."""
    for candidate in (explicit, os.environ.get("XPROF_PYTHON"), sys.executable):
        if candidate and subprocess.run([candidate, "-c", "import xprof.convert"],
                                        check=False, capture_output=True).returncode == 0:
            return candidate
    return None


def run_xprof(python: str, profile: str, group_by: str) -> tuple[str, dict]:
    """(xprof version, op_profile JSON) for one profile, via a temporary logdir copy."""
    with tempfile.TemporaryDirectory() as logdir:
        run = os.path.join(logdir, "plugins", "profile", "run")
        os.makedirs(run)
        copy = os.path.join(run, os.path.basename(profile))
        shutil.copyfile(profile, copy)
        out = subprocess.run([python, "-c", _RUN_XPROF, copy, group_by], check=True,
                             capture_output=True, text=True)
    answer = json.loads(out.stdout)
    return answer["version"], answer["tree"]


def _metrics(node: dict, total_ps: float) -> dict:
    m = node.get("metrics", {})
    time_ps = float(m.get("rawTime", 0))
    fraction = time_ps / total_ps if total_ps else 0.0
    return {
        "time_ps": time_ps,
        "time_share": fraction,
        "flops_utilization": float(m.get("flops", 0)) / fraction if fraction else 0.0,
        "bandwidth_utilization": float((m.get("bandwidthUtils") or [0])[0]),
        "occurrences": int(m.get("occurrences", 0)),
    }


def _ops_under(node: dict) -> list[dict]:
    """Op nodes below a category node: through "X and its duplicate(s)" groups, not into the
    fused instructions under an op."""
    out = []
    for child in node.get("children", []):
        if child.get("name", "").endswith(" and its duplicate(s)"):
            out.extend(_ops_under(child))
        elif child.get("xla"):
            out.append(child)
    return out


def reference(by_category: dict, by_program: dict, version: str, fixture: str) -> dict:
    root = by_category["byCategory"]
    total = float(root["metrics"]["rawTime"])
    categories, ops = {}, []
    for category in root.get("children", []):
        categories[category["name"]] = _metrics(category, total)
        for op in _ops_under(category):
            row = _metrics(op, total)
            row.update({"name": op["name"], "program_id": op["xla"]["programId"],
                        "category": op["xla"]["category"],
                        "fused": [c["name"] for c in op.get("children", [])]})
            ops.append(row)
    programs = {p["name"]: _metrics(p, total) for p in by_program["byProgram"].get("children", [])}
    return {
        "xprof_version": version,
        "fixture": fixture,
        "total_time_ps": total,
        "idle_time_ps": categories.get("IDLE", {}).get("time_ps", 0.0),
        "device_type": by_category.get("deviceType", ""),
        "categories": categories,
        "programs": programs,
        "ops": sorted(ops, key=lambda o: (-o["time_ps"], o["name"])),
    }


def record(python: str) -> None:
    os.makedirs(EXPECTED, exist_ok=True)
    for name, path in PROFILES.items():
        version, by_category = run_xprof(python, path, "category")
        _, by_program = run_xprof(python, path, "program")
        values = reference(by_category, by_program, version, os.path.relpath(path, ROOT))
        out = os.path.join(EXPECTED, f"op_profile_{name}.json")
        with open(out, "w") as f:
            json.dump(values, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {out}: {len(values['ops'])} ops, {len(values['categories'])} categories "
              f"(xprof {version})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xprof-python", help="an interpreter with xprof installed")
    args = parser.parse_args()
    python = xprof_python(args.xprof_python)
    if python is None:
        sys.exit("no interpreter can import xprof: pip install xprof into a separate venv and "
                 "pass --xprof-python (or set XPROF_PYTHON)")
    record(python)


if __name__ == "__main__":
    main()
