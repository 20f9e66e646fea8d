"""A synthetic XLA program: a transformer-like train (or eval) step as an HLO schedule.

The same program gives the op events (names, HLO text, costs, categories) and the HLO proto
with its buffer assignment, so the two always agree. Forward activations stay alive until the
backward pass uses them, which gives the memory profile its usual rise and fall.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

BF16, F32, U32 = 16, 11, 8
_TYPE_NAME = {BF16: "bf16", F32: "f32", U32: "u32"}
_TYPE_BYTES = {BF16: 2, F32: 4, U32: 4}
HBM, HOST = 0, 5  # memory colours


@dataclass
class Instr:
    """One HLO instruction of the entry computation, in schedule order."""

    name: str
    opcode: str
    dtype: int
    dims: tuple[int, ...]
    operands: list[str] = field(default_factory=list)
    category: str = ""
    fusion_kind: str = ""
    fused_ops: tuple[str, ...] = ()  # opcodes inside the fused computation, root last
    flops: int = 0
    bytes_accessed: int = 0
    base_ps: int = 0  # nominal time on the device
    memory_space: int = HBM
    tf_op: str = ""
    source: str = ""
    async_peer: str = ""  # the -start of a -done, the -done of a -start
    parameter_number: int = -1

    @property
    def executed(self) -> bool:
        """Parameters, constants and the root tuple run no code and have no op events."""
        return self.opcode not in ("parameter", "constant", "tuple")

    @property
    def elements(self) -> int:
        return int(np.prod(self.dims)) if self.dims else 1

    @property
    def nbytes(self) -> int:
        return self.elements * _TYPE_BYTES[self.dtype]


@dataclass
class Program:
    name: str  # e.g. jit_train_step
    program_id: int  # uint64
    module_id: int
    kind: str  # tpu | gpu
    instrs: list[Instr]
    outputs: list[str]  # the root tuple's operands, live out of the program

    @property
    def entry_name(self) -> str:
        return f"main.{self.module_id * 100 + len(self.instrs)}"

    @cached_property
    def ops(self) -> list[Instr]:
        return [i for i in self.instrs if i.executed]

    @cached_property
    def by_name(self) -> dict[str, Instr]:
        return {i.name: i for i in self.instrs}

    @property
    def display(self) -> str:
        """The module's display name in profiles: `jit_train_step(<program_id>)`."""
        return f"{self.name}({self.program_id})"

    def shape_text(self, instr: Instr) -> str:
        dims = ",".join(str(d) for d in instr.dims)
        minor = ",".join(str(d) for d in reversed(range(len(instr.dims))))
        layout = minor
        if self.kind == "tpu":
            if len(instr.dims) >= 2:
                layout += ":T(8,128)" + ("(2,1)" if instr.dtype == BF16 else "")
            elif instr.dims:
                layout += ":T(256)"
            if instr.memory_space:
                layout += f"S({instr.memory_space})"
        return f"{_TYPE_NAME[instr.dtype]}[{dims}]{{{layout}}}"

    def buffer_bytes(self, instr: Instr) -> int:
        """Size with the TPU tiling padding (the minor two dimensions rounded to the tile);
        a tuple's buffer is its table of 8-byte pointers."""
        if instr.opcode == "tuple":
            return 8 * len(instr.operands)
        if self.kind != "tpu" or not instr.dims:
            return instr.nbytes
        dims = list(instr.dims)
        if len(dims) >= 2:
            dims[-2] = -(-dims[-2] // (16 if instr.dtype == BF16 else 8)) * (
                16 if instr.dtype == BF16 else 8
            )
            dims[-1] = -(-dims[-1] // 128) * 128
        else:
            dims[-1] = -(-dims[-1] // 256) * 256
        return int(np.prod(dims)) * _TYPE_BYTES[instr.dtype]

    def hlo_text(self, instr: Instr) -> str:
        """The instruction as HLO text, as XLA Ops metadata names carry it."""
        by_name = self.by_name
        args = ", ".join(f"{self.shape_text(by_name[o])} %{o}" for o in instr.operands)
        text = f"%{instr.name} = {self.shape_text(instr)} {instr.opcode}({args})"
        if instr.opcode == "fusion":
            text += (
                f", kind={instr.fusion_kind}, calls=%fused_computation.{self._fusion_index(instr)}"
            )
        elif instr.opcode == "convolution":
            text += ", dim_labels=bf_io->bf"
        elif instr.opcode == "all-reduce-start":
            text += ", replica_groups={{0,1,2,3}}, to_apply=%add.clone"
        elif instr.opcode == "custom-call":
            text += ', custom_call_target="tpu_custom_call"'
        elif instr.opcode in ("transpose", "reduce"):
            text += ", dimensions={1,0}" if instr.opcode == "transpose" else ", dimensions={1}"
        return text

    def _fusion_index(self, instr: Instr) -> int:
        return int(instr.name.rsplit(".", 1)[1])


# (opcode, category, fusion kind, fused opcodes) of the building blocks.
_LOOP = ("fusion", "loop fusion", "kLoop")
_CONV_FUSION = ("fusion", "convolution fusion", "kOutput")
_OUTPUT = ("fusion", "output fusion", "kOutput")
_FUSED = {
    "kLoop": ("parameter", "parameter", "multiply", "add"),
    "kOutput": ("parameter", "parameter", "convolution", "add"),
}


class _Builder:
    """Appends instructions with XLA-style names (`fusion.3`, `convolution.7`)."""

    def __init__(
        self, kind: str, rng: np.random.Generator, peak_flops: float, peak_bw: float, prefix: str
    ):
        self.kind, self.rng, self.prefix = kind, rng, prefix
        self.peak_flops, self.peak_bw = peak_flops, peak_bw
        self.instrs: list[Instr] = []
        self._counts: dict[str, int] = {}

    def _name(self, opcode: str) -> str:
        n = self._counts.get(opcode, 0)
        self._counts[opcode] = n + 1
        return f"{opcode}.{n}"

    def add(
        self,
        opcode: str,
        dims: tuple[int, ...],
        operands: list[str],
        scope: str,
        category: str = "",
        fusion_kind: str = "",
        dtype: int = BF16,
        flops: int = 0,
        memory_space: int = HBM,
        **extra,
    ) -> str:
        name = self._name(opcode)
        instr = Instr(
            name,
            opcode,
            dtype,
            dims,
            operands,
            category,
            fusion_kind,
            _FUSED.get(fusion_kind, ()),
            memory_space=memory_space,
            **extra,
        )
        in_bytes = sum(self.get(o).nbytes for o in operands)
        instr.bytes_accessed = in_bytes + instr.nbytes
        instr.flops = flops if flops else (3 * instr.elements if opcode == "fusion" else 0)
        if instr.executed:
            compute = instr.flops / (self.peak_flops * self.rng.uniform(0.35, 0.75))
            memory = instr.bytes_accessed / (self.peak_bw * self.rng.uniform(0.5, 0.85))
            busy = max(compute, memory)
            if opcode.endswith(("-start", "-done")):  # the transfer itself runs in the background
                busy = 0.0
            instr.base_ps = int(1e12 * (busy + self.rng.uniform(0.4e-6, 1.5e-6)))
            instr.tf_op = f"jit({self.prefix})/jit(main)/{scope}/{opcode.split('-')[0]}"
            instr.source = f"model.py:{100 + 7 * (len(self.instrs) % 60)}"
        self.instrs.append(instr)
        return name

    def get(self, name: str) -> Instr:
        for instr in reversed(self.instrs):
            if instr.name == name:
                return instr
        raise KeyError(name)

    def matmul(self, a: str, w: str, scope: str, fused: bool) -> str:
        (m, k), n = self.get(a).dims, self.get(w).dims[1]
        spec = _CONV_FUSION if fused else ("convolution", "convolution", "")
        return self.add(spec[0], (m, n), [a, w], scope, spec[1], spec[2], flops=2 * m * k * n)

    def loop(
        self,
        operands: list[str],
        scope: str,
        dims: tuple[int, ...] | None = None,
        category: str = "loop fusion",
    ) -> str:
        dims = dims or self.get(operands[0]).dims
        return self.add("fusion", dims, operands, scope, category, "kLoop")


def make_program(
    name: str, kind: str, layers: int, seed: int, train: bool, peak_flops: float, peak_bw: float,
    custom_call: bool = False,
) -> Program:
    """A forward pass over `layers` blocks, and for training the backward pass with async
    gradient all-reduces, an optimizer update and a host-offloaded activation. `custom_call`:
    the forward softmax is a Pallas kernel (a `custom-call` to `tpu_custom_call`, no cost)."""
    rng = np.random.default_rng([seed, layers, int(train)])
    tokens, d_model, d_ff, vocab = 8192, 1024, 4096, 1000
    b = _Builder(kind, rng, peak_flops, peak_bw, name.removeprefix("jit_"))
    params = 0

    def param(dims, dtype=BF16):
        nonlocal params
        params += 1
        return b.add("parameter", dims, [], "", dtype=dtype, parameter_number=params - 1)

    x = param((tokens, d_model))
    labels = param((tokens,), U32)
    weights = [
        (
            param((d_model, 3 * d_model)),
            param((3 * d_model, d_model)),
            param((d_model, d_ff)),
            param((d_ff, d_model)),
        )
        for _ in range(layers)
    ]
    head = param((d_model, vocab))
    scale = b.add("constant", (), [], "", dtype=F32)

    def attention_scores(source: str, name: str) -> str:
        """The scores' fusion (q against 512 keys), forward and as its gradient."""
        return b.add("fusion", (tokens, 3 * d_model), [source], name, "convolution fusion",
                     "kOutput", flops=2 * tokens * 3 * d_model * 512)

    saved = []
    h = x
    for i, (w_qkv, w_o, w_up, w_down) in enumerate(weights):
        s = f"layer_{i}"
        ln = b.loop([h], f"{s}/layer_norm")
        qkv = b.matmul(ln, w_qkv, f"{s}/attention/qkv", fused=False)
        scores = attention_scores(qkv, f"{s}/attention/scores")
        if custom_call:
            probs = b.add("custom-call", b.get(scores).dims, [scores],
                          f"{s}/attention/pallas_softmax", "custom-call")
        else:
            probs = b.loop([scores], f"{s}/attention/softmax")
        t = b.add(
            "transpose",
            (tokens, 3 * d_model),
            [probs],
            f"{s}/attention/transpose",
            "data formatting",
        )
        att = b.matmul(t, w_o, f"{s}/attention/out", fused=True)
        res = b.loop([att, h], f"{s}/residual")
        up = b.matmul(res, w_up, f"{s}/mlp/up", fused=True)
        act = b.loop([up], f"{s}/mlp/gelu")
        down = b.matmul(act, w_down, f"{s}/mlp/down", fused=False)
        h = b.loop([down, res], f"{s}/residual_1")
        saved.append((ln, probs, res, act))
    logits = b.matmul(h, head, "head", fused=True)
    loss = b.add(
        "reduce", (), [logits, labels], "loss", "reduce", dtype=F32, flops=3 * tokens * vocab
    )
    outputs = [loss]
    if train:
        offloaded = b.add(
            "copy-start",
            b.get(saved[0][3]).dims,
            [saved[0][3]],
            "offload",
            "copy-start",
            memory_space=HOST,
        )
        g = b.loop([logits, loss, scale], "grad/head", dims=(tokens, vocab))
        g = b.matmul(g, head, "grad/head_t", fused=False)
        g = b.add(
            "fusion",
            (tokens, d_model),
            [g],
            "grad/head_t",
            "convolution fusion",
            "kOutput",
            flops=2 * tokens * vocab * d_model,
        )
        pending = ""
        for i in reversed(range(layers)):
            s = f"grad/layer_{i}"
            ln, probs, res, act = saved[i]
            w_qkv, w_o, w_up, w_down = weights[i]
            if pending:  # async pairs never interleave: the previous one completes first
                b.add(
                    "all-reduce-done",
                    b.get(pending).dims,
                    [pending],
                    s,
                    "all-reduce",
                    async_peer=pending,
                )
                b.get(pending).async_peer, pending = b.instrs[-1].name, ""
            if i == 0:
                act = b.add(
                    "copy-done",
                    b.get(act).dims,
                    [offloaded],
                    "offload",
                    "copy-done",
                    async_peer=offloaded,
                )
                b.get(offloaded).async_peer = act
            g_act = b.matmul(
                g,
                b.add("transpose", (d_model, d_ff), [w_down], s, "data formatting"),
                f"{s}/mlp/down_t",
                fused=True,
            )
            g_up = b.loop([g_act, act], f"{s}/mlp/gelu_grad")
            dw_up = b.add(
                "fusion",
                (d_model, d_ff),
                [res, g_up],
                f"{s}/mlp/up_w",
                "convolution fusion",
                "kOutput",
                flops=2 * tokens * d_model * d_ff,
            )
            g_res = b.matmul(
                g_up,
                b.add("copy", (d_ff, d_model), [w_up], s, "data formatting"),
                f"{s}/mlp/up_t",
                fused=True,
            )
            start = b.add("all-reduce-start", (d_model, d_ff), [dw_up], s, "all-reduce")
            pending = start
            g_att = b.loop([g_res, g], f"{s}/residual_grad")
            g_probs = b.matmul(
                g_att,
                b.add("transpose", (d_model, 3 * d_model), [w_o], s, "data formatting"),
                f"{s}/attention/out_t",
                fused=True,
            )
            g_scores = b.loop([g_probs, probs], f"{s}/attention/softmax_grad")
            g_qkv = attention_scores(g_scores, f"{s}/attention/scores_t")
            dw_qkv = b.add(
                "fusion",
                (d_model, 3 * d_model),
                [ln, g_qkv],
                f"{s}/attention/qkv_w",
                "output fusion",
                "kOutput",
                flops=2 * tokens * d_model * 3 * d_model,
            )
            g_ln = b.matmul(
                g_qkv,
                b.add("transpose", (3 * d_model, d_model), [w_qkv], s, "data formatting"),
                f"{s}/attention/qkv_t",
                fused=False,
            )
            g = b.loop([g_ln, g_att], f"{s}/layer_norm_grad")
            for w, dw in ((w_qkv, dw_qkv), (w_up, dw_up)):
                outputs.append(b.loop([w, dw, scale], f"{s}/sgd", dims=b.get(w).dims))
        if pending:
            b.add(
                "all-reduce-done",
                b.get(pending).dims,
                [pending],
                "grad",
                "all-reduce",
                async_peer=pending,
            )
            b.get(pending).async_peer = b.instrs[-1].name
        outputs.append(b.loop([head, g, scale], "sgd_head", dims=b.get(head).dims))
    b.add("tuple", (), outputs, "")
    module_id = 1 + int(rng.integers(1, 60))
    program_id = int(rng.integers(1 << 62, 1 << 63)) * 2 + (1 if train else 0)
    if not train:
        program_id >>= 2  # under 2**63: profiles hold both signed-looking and unsigned ids
    return Program(name, program_id, module_id, kind, b.instrs, outputs)


def layers_for(ops_per_execution: int, train: bool = True) -> int:
    """Layers whose train program has about this many op events per execution."""
    per_layer = 30 if train else 11
    return max(1, round(ops_per_execution / per_layer))
