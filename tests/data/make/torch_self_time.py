"""Make tests/data/torch_self_time/: a CPU PyTorch profiler trace and its key_averages() table
(torch 2.13.0, CPU build), to check host self time against PyTorch's own numbers.

Produces:

  tests/data/torch_self_time/trace.json.gz
      gzip (mtime 0) of prof.export_chrome_trace(...) of the run below.
  tests/data/torch_self_time/key_averages.json
      prof.key_averages() of the same run, one object per row: key, count,
      cpu_time_total_us, self_cpu_time_total_us (PyTorch's floats, microseconds).
  tests/data/torch_self_time/key_averages_by_input_shape.json
      prof.key_averages(group_by_input_shape=True): the same fields and input_shapes, the
      op's input dims as str() writes the list (PyTorch's own grouping key).

What the run does: a small conv net (Conv2d 3->8, ReLU, MaxPool, Linear 8*8*8 -> 10, then
ScaledTanh, a custom autograd.Function) trained 4 steps with SGD under
torch.profiler.profile(activities=[CPU], record_shapes=True); each step's forward and loss run
inside record_function("my_block"), the optimizer step inside
record_function("optimizer_block"). ScaledTanh's backward runs its work inside
record_function("scaled_tanh_grad") after some pure-Python work, so a cpu_op
(ScaledTanhBackward) holds a user annotation that holds ops: PyTorch counts the annotation as
the op's child (the op's self time excludes all of it), where the old rule here subtracted only
the ops inside.

Run (from the repo root):

  python3 -m venv /tmp/torchvenv
  /tmp/torchvenv/bin/pip install torch==2.13.0 numpy     # the CPU build (2.13.0+cpu)
  /tmp/torchvenv/bin/python tests/data/make/torch_self_time.py

Seeds are fixed (torch.manual_seed(0)); timings vary from run to run.
"""
import gzip
import json
import os
import tempfile

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "torch_self_time")
STEPS = 4


class ScaledTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return 2 * y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        with record_function("scaled_tanh_grad"):
            sum(i * i for i in range(20000))      # Python time inside the annotation
            return grad * 2 * (1 - y * y)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(8 * 8 * 8, 10))

    def forward(self, x):
        return ScaledTanh.apply(self.body(x))


def make_model():
    return Net()


def main():
    torch.manual_seed(0)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    loss_fn = nn.CrossEntropyLoss()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(STEPS):
            opt.zero_grad()
            with record_function("my_block"):
                loss = loss_fn(model(x), y)
            loss.backward()
            with record_function("optimizer_block"):
                opt.step()
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, "rb") as f, open(os.path.join(OUT, "trace.json.gz"), "wb") as out, \
                gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
            gz.write(f.read())
    rows = [{"key": e.key, "count": e.count, "cpu_time_total_us": e.cpu_time_total,
             "self_cpu_time_total_us": e.self_cpu_time_total} for e in prof.key_averages()]
    with open(os.path.join(OUT, "key_averages.json"), "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    rows = [{"key": e.key, "input_shapes": str(e.input_shapes), "count": e.count,
             "cpu_time_total_us": e.cpu_time_total,
             "self_cpu_time_total_us": e.self_cpu_time_total}
            for e in prof.key_averages(group_by_input_shape=True)]
    with open(os.path.join(OUT, "key_averages_by_input_shape.json"), "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
