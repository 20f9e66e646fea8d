"""Make the PyTorch profiler fixtures (torch 2.13.0, CPU build).

Produces (all copied into tests/data/, temp dirs removed):

  tests/data/torch_export/trace.json
      prof.export_chrome_trace("trace.json"), called from on_trace_ready.
  tests/data/torch_tb_handler/worker0.<timestamp>.pt.trace.json
      written by torch.profiler.tensorboard_trace_handler(dir,
      worker_name="worker0"); the name it gets is kept (the timestamp part
      changes on every run, so the old file is deleted first).
  tests/data/torch_hta/rank-0.json.gz
      gzip (mtime 0) of the trace of a third run made the way HTA users get
      theirs: a 1-rank torch.distributed "gloo" group (file:// rendezvous in a
      temp dir, no network) and DistributedDataParallel, so the trace has
      "distributedInfo" (rank 0, world_size 1) and gloo all_reduce events.

What each run does: a tiny MLP (64 -> 128 -> 10, SGD lr 0.1) trained over a
torch.utils.data.DataLoader (num_workers=0, batch_size 16, shuffle=False) of a
Dataset whose __getitem__ does a little work (a seeded 64-vector pushed
through tanh(x @ W) with a fixed 64x64 W). The loop runs 6 steps under

  torch.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=True,
      profile_memory=True, with_stack=False,
      schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
      on_trace_ready=...)

with prof.step() after every step, so each trace holds one cycle: the active
steps ProfilerStep#2, ProfilerStep#3 and ProfilerStep#4 (step 0 waits, step 1
warms up, step 5 is after the cycle).

Run (from the repo root):

  python3 -m venv /tmp/fx-torch
  /tmp/fx-torch/bin/pip install torch==2.13.0     # the CPU build (2.13.0+cpu)
  /tmp/fx-torch/bin/python tests/data/make/torch_profiler.py

Seeds are fixed (torch.manual_seed(0) before each run); timings vary.
"""
import glob
import gzip
import os
import shutil
import tempfile

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
STEPS, BATCH, DIM = 6, 16, 64


class WorkDataset(torch.utils.data.Dataset):
    def __init__(self, n=STEPS * BATCH):
        self.n = n
        self.w = torch.randn(DIM, DIM, generator=torch.Generator().manual_seed(1)) / DIM ** 0.5

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(DIM, generator=g)
        x = torch.tanh(x @ self.w)              # "a little work" per sample
        return x, i % 10


def make_model():
    return nn.Sequential(nn.Linear(DIM, 128), nn.ReLU(), nn.Linear(128, 10))


def train(model, on_trace_ready):
    loader = torch.utils.data.DataLoader(WorkDataset(), batch_size=BATCH,
                                         shuffle=False, num_workers=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 profile_memory=True, with_stack=False,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=on_trace_ready) as prof:
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            prof.step()


def run_export():
    torch.manual_seed(0)
    out_dir = os.path.join(DATA, "torch_export")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "trace.json")
    tmp = tempfile.mkdtemp(prefix="fx-torch-export-")
    try:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            # PyTorch's documented call, relative name and all.
            train(make_model(), lambda prof: prof.export_chrome_trace("trace.json"))
        finally:
            os.chdir(cwd)
        shutil.copyfile(os.path.join(tmp, "trace.json"), out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(out, os.path.getsize(out))


def run_tb(model=None, tag="tb"):
    torch.manual_seed(0)
    tmp = tempfile.mkdtemp(prefix=f"fx-torch-{tag}-")
    try:
        train(model or make_model(), tensorboard_trace_handler(tmp, worker_name="worker0"))
        found = glob.glob(os.path.join(tmp, "worker0.*.pt.trace.json"))
        assert len(found) == 1, found
        with open(found[0], "rb") as f:
            return os.path.basename(found[0]), f.read()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_tb_handler():
    out_dir = os.path.join(DATA, "torch_tb_handler")
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "*.pt.trace.json")):
        os.remove(old)
    name, data = run_tb()
    out = os.path.join(out_dir, name)
    with open(out, "wb") as f:
        f.write(data)
    print(out, len(data))


def run_hta():
    import torch.distributed as dist
    out_dir = os.path.join(DATA, "torch_hta")
    os.makedirs(out_dir, exist_ok=True)
    rdv = tempfile.mkdtemp(prefix="fx-torch-rdv-")
    try:
        dist.init_process_group("gloo", init_method="file://" + os.path.join(rdv, "store"),
                                rank=0, world_size=1)
        try:
            torch.manual_seed(0)
            ddp = nn.parallel.DistributedDataParallel(make_model())
            _, data = run_tb(ddp, tag="hta")
        finally:
            dist.destroy_process_group()
    finally:
        shutil.rmtree(rdv, ignore_errors=True)
    out = os.path.join(out_dir, "rank-0.json.gz")
    with open(out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
        gz.write(data)
    print(out, os.path.getsize(out), f"({len(data)} bytes unzipped)")


if __name__ == "__main__":
    run_export()
    run_tb_handler()
    run_hta()
