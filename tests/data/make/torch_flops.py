"""Make tests/data/torch_flops/: a CPU PyTorch profiler trace with shapes and PyTorch's own FLOP
counts (torch 2.13.0, CPU build), to check op FLOPs and bytes from shapes (analysis/kineto/flops.py).

Produces:

  tests/data/torch_flops/trace.json.gz
      gzip (mtime 0) of prof.export_chrome_trace(...) of the run below: every cpu_op carries
      `Input Dims` and `Input type` (record_shapes=True); the ops PyTorch counts carry `flops`
      (with_flops=True) where the exporter writes it (torch 2.13's does not).
  tests/data/torch_flops/key_averages_by_input_shape.json
      prof.key_averages(group_by_input_shape=True) of the same run, one object per row with a
      FLOP count: key, input_shapes (str() of the list), count, flops (PyTorch's own total of
      the group, from with_flops=True): PyTorch's answer to check ours against.

What the run does, once, at fixed shapes, in float32 and again in bfloat16 (each dtype inside
record_function("float32") / ("bfloat16")):
  mm [64,128]x[128,32]; addmm bias[32] + [64,128]x[128,32]; bmm [4,64,128]x[4,128,32];
  baddbmm [4,64,32] + [4,64,128]x[4,128,32]; matmul [4,64,128]x[128,32];
  linear x[64,128], W[32,128], b[32]; conv2d x[2,3,16,16], W[8,3,3,3], b[8], padding 1;
  scaled_dot_product_attention q,k,v [2,4,16,8] (not causal);
  elementwise add, mul of two [64,128]; relu, gelu of [64,128];
  reductions sum and mean of [64,128] (over all), softmax of [64,128] over the last dim.

Run (from the repo root):

  /tmp/torchvenv/bin/python tests/data/make/torch_flops.py

Seeds are fixed (torch.manual_seed(0)); timings vary from run to run.
"""
import gzip
import json
import os
import tempfile

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "torch_flops")


def run(dtype):
    def r(*shape):
        return torch.randn(*shape, dtype=dtype)

    a, b = r(64, 128), r(128, 32)
    torch.mm(a, b)
    torch.addmm(r(32), a, b)
    ba, bb = r(4, 64, 128), r(4, 128, 32)
    torch.bmm(ba, bb)
    torch.baddbmm(r(4, 64, 32), ba, bb)
    torch.matmul(ba, b)
    F.linear(a, r(32, 128), r(32))
    F.conv2d(r(2, 3, 16, 16), r(8, 3, 3, 3), r(8), padding=1)
    q, k, v = r(2, 4, 16, 8), r(2, 4, 16, 8), r(2, 4, 16, 8)
    F.scaled_dot_product_attention(q, k, v)
    c = r(64, 128)
    torch.add(a, c)
    torch.mul(a, c)
    torch.relu(a)
    F.gelu(a)
    torch.sum(a)
    torch.mean(a)
    torch.softmax(a, dim=-1)


def main():
    torch.manual_seed(0)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
        for dtype in (torch.float32, torch.bfloat16):
            with record_function(str(dtype).removeprefix("torch.")):
                run(dtype)
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, "rb") as f:
            trace = f.read()
    with open(os.path.join(OUT, "trace.json.gz"), "wb") as out:
        out.write(gzip.compress(trace, mtime=0))
    rows = [{"key": e.key, "input_shapes": str(e.input_shapes), "count": e.count,
             "flops": e.flops}
            for e in prof.key_averages(group_by_input_shape=True) if e.flops]
    with open(os.path.join(OUT, "key_averages_by_input_shape.json"), "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
