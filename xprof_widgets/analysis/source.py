"""Where an op came from in the user's code: its source stack, and the lines around a frame.

The stack comes, in order of preference, from the HLO module's stack frame index (every frame,
with function names), from the `source_stack` stat on op events
(`file:line:column` per line; the TPU runtime writes it outermost first, as a traceback reads),
then from the op's metadata
`source_file:source_line` or the `source` stat (the innermost frame only). In a notebook the
user's files are usually on the kernel's machine, so a frame's lines are read from there; a file
that is not there, not a regular text file, or too large is answered with why, never read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

from ..errors import ProfileError
from ..profile.hlo import HloModule, SourceFrame
from .graph import module_graph

SOURCE_CONTEXT = 4
"""Lines shown either side of a frame's line."""
MAX_SOURCE_BYTES = 4 * 2**20
"""Largest file read for its lines: a source file is far smaller; a bigger one is data."""
_BINARY_PROBE = 8192  # bytes checked for a NUL, the mark of a binary file


# ---- the stack --------------------------------------------------------------------------------
def parse_stack(text: Any) -> list[SourceFrame]:
    """Frames of a `source_stack` or `source` stat, `file:line[:column]` per line, in the order
    written; a line without a line number is skipped."""
    frames = []
    for entry in str(text or "").splitlines():
        head, _, last = entry.strip().rpartition(":")
        column = -1
        if head and _is_int(last) and ":" in head:
            file, _, line = head.rpartition(":")
            if _is_int(line):
                head, last, column = file, line, int(last)
        if head and _is_int(last):
            frames.append(SourceFrame(head, int(last), column))
    return frames


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def instruction_stack(module: HloModule | None, instruction: Any,
                      stats: Mapping[str, Any] | None = None) -> list[SourceFrame]:
    """An op's source stack, innermost first, from the best source at hand: the module's stack
    frame index, the `source_stack` stat, the op metadata's file and line, the `source` stat."""
    stats = stats or {}
    if module is not None and instruction is not None:
        frames = module.stack_of(instruction)
        if frames:
            return frames
    frames = parse_stack(stats.get("source_stack"))
    if frames:
        return _innermost_first(frames, parse_stack(stats.get("source")))
    meta = instruction.metadata if instruction is not None else None
    if meta is not None and meta.source_file:
        return [SourceFrame(meta.source_file, int(meta.source_line))]
    return parse_stack(stats.get("source"))


def _innermost_first(frames: list[SourceFrame], source: list[SourceFrame]
                     ) -> list[SourceFrame]:
    """A `source_stack` stat turned innermost first. Profiles seen write it outermost first
    with `source` (the innermost frame) last; one whose first frame is `source` is kept."""
    if source and frames[0][:2] == source[0][:2]:
        return frames
    return frames[::-1]


def op_stacks(profile: Any, module: int | str, ops: list[str]) -> list[list[SourceFrame]]:
    """The source stacks of instructions of `module` (name, label or program id), with the Op
    Profile's `source_stack` / `source` stats as the fallback; [] for an op nothing records."""
    graph = module_graph(profile, module)
    stats = _op_stats(profile, graph.program_id)
    stacks = []
    for op in ops:
        hit = graph.find(op)
        instruction = hit[0].proto.instructions[hit[1]] if hit else None
        stacks.append(instruction_stack(graph.module, instruction, stats.get(op)))
    return stacks


def op_stack(profile: Any, module: int | str, op: str) -> list[SourceFrame]:
    """The source stack of one instruction (see op_stacks)."""
    return op_stacks(profile, module, [op])[0]


def _op_stats(profile: Any, program_id: int) -> dict[str, dict[str, Any]]:
    """Op name -> the `source_stack` and `source` stats the program's op events carry."""
    from .op_profile import analyze_op_profile

    try:
        ops = analyze_op_profile(profile).ops
    except ProfileError:
        return {}
    pid = int(program_id) & (2**64 - 1)
    mine = ops[ops["program_id"].map(lambda p: int(p) & (2**64 - 1)) == pid]
    mine = mine.drop_duplicates("name")
    return {str(name): {"source_stack": stack, "source": source} for name, stack, source
            in zip(mine["name"], mine["source_stack"], mine["source"], strict=True)}


def event_stack(profile: Any, event: int) -> list[SourceFrame]:
    """The source stack of the XLA op a trace event ran ([] for other events): the op's HLO
    instruction (CPU and GPU kernel events name it in `hlo_op`, TPU op lines by their display
    name; the module by `program_id`, else by the `hlo_module` name), else the event's stats."""
    stats = {**profile.metadata_stats(event), **profile.event_stats(event)}
    op = stats.get("hlo_op")
    if op is None and "hlo_category" in stats:
        op = profile.metadata["display_name"].iat[int(profile.meta[event])]
    if op is None:
        return []
    module = instruction = None
    program_id = stats.get("program_id")
    key = (int(program_id) & (2**64 - 1) if program_id is not None
           else stats.get("hlo_module"))
    if key is not None and len(profile.hlo_modules):
        try:
            graph = module_graph(profile, key)
        except ProfileError:  # a program whose HLO the profile lacks
            graph = None
        hit = graph.find(str(op)) if graph is not None else None
        if hit:
            module, instruction = graph.module, hit[0].proto.instructions[hit[1]]
    return instruction_stack(module, instruction, stats)


def stack_text(frames: list[SourceFrame]) -> str:
    """The stack as text, a `file:line` per frame, innermost first (the `source_stack` column)."""
    return "\n".join(f"{f.file}:{f.line}" for f in frames)


def frames_json(frames: list[SourceFrame]) -> list[dict[str, Any]]:
    """Frames as the views receive them."""
    return [f._asdict() for f in frames]


# ---- the lines --------------------------------------------------------------------------------
def source_lines(frame: SourceFrame, around: int = SOURCE_CONTEXT) -> dict[str, Any]:
    """The lines around a frame's line when its file is on this machine: {file, line, first,
    lines}; {file, line, missing: why} when it is not there, is not a regular file (a pipe or a
    device is never opened for reading), is binary, too large or not readable."""
    answer: dict[str, Any] = {"file": frame.file, "line": frame.line}
    if not frame.file or frame.line < 1:
        return {**answer, "missing": "the profile records no file and line for this frame"}
    if frame.file.startswith("<") and frame.file.endswith(">"):
        return {**answer, "missing": "no file on disk: code built into or generated by Python"}
    data_or_why = _read_text_file(os.path.expanduser(frame.file))
    if isinstance(data_or_why, str):
        return {**answer, "missing": data_or_why}
    text = data_or_why.decode("utf-8", errors="replace").splitlines()
    if frame.line > len(text):
        return {**answer, "missing": f"the file here has {len(text)} lines, fewer than the "
                                     "profile's line: it changed since the profile was taken"}
    first = max(1, frame.line - around)
    return {**answer, "first": first, "lines": text[first - 1:frame.line + around]}


def _read_text_file(path: str) -> bytes | str:
    """A regular text file's bytes, or why it is not read. The file is opened without blocking
    and checked on its descriptor, so a name swapped for a pipe between checks cannot hang."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return "not on this machine"
    except PermissionError:
        return "on this machine, but not readable here (permission denied)"
    except OSError as exc:
        return f"not readable here ({exc.strerror or type(exc).__name__})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file here"
        if info.st_size > MAX_SOURCE_BYTES:
            return (f"too large to show ({info.st_size / 2**20:.1f} MiB; source files are "
                    f"under {MAX_SOURCE_BYTES // 2**20} MiB)")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        return f"not readable here ({exc.strerror or type(exc).__name__})"
    finally:
        os.close(fd)
    if b"\0" in data[:_BINARY_PROBE]:
        return "a binary file, not source text"
    return data


def source_answer(frames: list[SourceFrame], frame: int = 0,
                  around: int = SOURCE_CONTEXT) -> dict[str, Any]:
    """What a view's `source` request gets: the whole stack and the lines of one frame of it."""
    if not frames:
        return {"frames": [], "frame": None,
                "missing": "the profile records no source for this op"}
    k = min(max(0, int(frame)), len(frames) - 1)
    return {"frames": frames_json(frames), "frame": k, **source_lines(frames[k], around)}


__all__ = ["MAX_SOURCE_BYTES", "SOURCE_CONTEXT", "event_stack", "frames_json",
           "instruction_stack", "op_stack", "op_stacks", "parse_stack", "source_answer",
           "source_lines", "stack_text"]
