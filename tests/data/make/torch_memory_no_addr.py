"""Make tests/data/torch_memory_no_addr/trace.json.gz: a real CUDA training trace written back
in the shape of an older PyTorch's (1.9 and before), whose `[memory]` events carry no `Addr`,
no `Total Allocated`, no `Total Reserved` and no `Ev Idx`: only `Bytes`, `Device Type` and
`Device Id`.

Source: HTA's tests/data/public/hta/df_index_resolver/df_index_resolver.json.gz (V100, two
threads: forward and autograd backward). Kept: its header, metadata events, and of its host
events the `cpu_op`s, `user_annotation`s (ProfilerStep#N among them) and `[memory]` events
that start inside ProfilerStep#5 and #6 (the peak of cuda:1 is in #6); the ops keep no args,
the memory events the three above. GPU work and runtime calls are left out (the memory tools
read none) to keep the file small.

Run (from the repo root): python tests/data/make/torch_memory_no_addr.py
"""

import gzip
import json
from pathlib import Path

DATA = Path(__file__).parents[1]
SOURCE = DATA / "public" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"
OUT = DATA / "torch_memory_no_addr" / "trace.json.gz"
STEPS = ("ProfilerStep#5", "ProfilerStep#6")
KEPT_ARGS = ("Bytes", "Device Type", "Device Id")


def main() -> None:
    doc = json.loads(gzip.decompress(SOURCE.read_bytes()))
    events = doc["traceEvents"]
    steps = [e for e in events if e.get("name") in STEPS and e.get("ph") == "X"]
    start = min(e["ts"] for e in steps)
    end = max(e["ts"] + e["dur"] for e in steps)
    kept = []
    for e in events:
        if e.get("ph") == "M":
            kept.append(e)
        elif e.get("cat") in ("cpu_op", "user_annotation") and start <= e["ts"] <= end:
            kept.append({k: v for k, v in e.items() if k != "args"})
        elif e.get("name") == "[memory]" and start <= e["ts"] <= end:
            e["args"] = {k: e["args"][k] for k in KEPT_ARGS}
            kept.append(e)
    doc["traceEvents"] = kept
    text = json.dumps(doc, separators=(",", ":")).encode()
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    print(f"{OUT}: {len(kept)} events, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
