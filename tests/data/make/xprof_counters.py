"""Makes tests/data/xprof_counters/: the synthetic XSpaces XProf's utilization_viewer and
megascale_stats read (no real TPU counter or multislice profile can be captured here).

    .venv/bin/python tests/data/make/xprof_counters.py

Kept out of tests/data's top level, which every tool's parity test runs on: these hold only the
planes those two tools read. `python -m xprof_widgets.synthetic OUT --kind tpu_counters` (or
`--kind megascale`) writes the same files for a demo.
"""

from __future__ import annotations

from pathlib import Path

from xprof_widgets.synthetic.megascale import write_megascale_profile
from xprof_widgets.synthetic.utilization import write_utilization_profile

OUT = Path(__file__).parents[1] / "xprof_counters"

if __name__ == "__main__":
    for written in (write_utilization_profile(OUT / "synthetic_tpu_counters.xplane.pb"),
                    write_megascale_profile(OUT / "synthetic_megascale.xplane.pb")):
        print(written, written.stat().st_size, "bytes")
