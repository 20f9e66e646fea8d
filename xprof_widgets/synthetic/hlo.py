"""The `xla.HloProto` of a synthetic program: module, computations and a buffer assignment.

The buffer assignment is simulated the way XLA's heap simulator reports it: in schedule order
each instruction allocates its output (or shares its operand's buffer when it may update it in
place) and frees the buffers whose last use it is; first-fit offsets inside one temp allocation
per memory colour. Parameters, constants and live-out values get allocations of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..profile.schema import HloProto
from .program import Instr, Program

ALLOC, FREE, SHARE_WITH = 0, 1, 2
_ALIGN = 64


@dataclass
class _Buffer:
    id: int
    instr: Instr
    size: int
    color: int
    offset: int = 0
    canonical: int = 0  # the buffer whose memory this one shares (itself if none)


def _shape(program: Program, instr: Instr, proto) -> None:
    if instr.opcode == "tuple":
        proto.element_type = 13
        for name in instr.operands:
            _shape(program, program.by_name[name], proto.tuple_shapes.add())
        return
    proto.element_type = instr.dtype
    proto.dimensions.extend(instr.dims)
    proto.is_dynamic_dimension.extend([False] * len(instr.dims))
    proto.layout.minor_to_major.extend(reversed(range(len(instr.dims))))
    if program.kind == "tpu" and instr.dims:
        proto.layout.tiles.add(dimensions=[8, 128] if len(instr.dims) >= 2 else [256])
    proto.layout.memory_space = instr.memory_space


def _first_fit(free: list[tuple[int, int]], size: int) -> int:
    """Takes `size` bytes from the first free interval that fits; `free` ends with an open one."""
    for i, (start, length) in enumerate(free):
        if length >= size:
            free[i] = (start + size, length - size)
            return start
    raise AssertionError("the last free interval is unbounded")


def _release(free: list[tuple[int, int]], start: int, size: int) -> None:
    free.append((start, size))
    free.sort()
    merged = [free[0]]
    for s, n in free[1:]:
        ps, pn = merged[-1]
        if ps + pn == s:
            merged[-1] = (ps, pn + n)
        else:
            merged.append((s, n))
    free[:] = merged


def build_hlo_proto(program: Program) -> bytes:
    """Serialized `xla.HloProto` of the program, deterministic."""
    proto = HloProto()
    module = proto.hlo_module
    module.name, module.id = program.name, program.module_id
    module.entry_computation_name = program.entry_name
    entry_id = 1
    ids = {instr.name: (entry_id << 32) | i for i, instr in enumerate(program.instrs)}
    fused_ids = {}
    for comp_id, instr in enumerate((i for i in program.instrs if i.opcode == "fusion"), start=2):
        comp = module.computations.add(
            name=f"fused_computation.{instr.name.split('.')[1]}", id=comp_id
        )
        fused_ids[instr.name] = comp_id
        index = instr.name.split(".")[1]
        for j, opcode in enumerate(instr.fused_ops):
            sub_name = f"param_{j}.{index}" if opcode == "parameter" else f"{opcode}.{index}.{j}"
            sub = comp.instructions.add(name=sub_name, opcode=opcode, id=(comp_id << 32) | j)
            _shape(program, instr, sub.shape)
            if opcode == "parameter":
                sub.parameter_number = j
            else:
                sub.operand_ids.extend([(comp_id << 32) | (j - 2), (comp_id << 32) | (j - 1)])
        comp.root_id = (comp_id << 32) | (len(instr.fused_ops) - 1)
    entry = module.computations.add(
        name=program.entry_name, id=entry_id, root_id=ids[program.instrs[-1].name]
    )
    module.entry_computation_id = entry_id
    for instr in program.instrs:
        hi = entry.instructions.add(name=instr.name, opcode=instr.opcode, id=ids[instr.name])
        _shape(program, instr, hi.shape)
        hi.operand_ids.extend(ids[o] for o in instr.operands)
        if instr.opcode == "parameter":
            hi.parameter_number = instr.parameter_number
        if instr.opcode == "fusion":
            hi.fusion_kind = instr.fusion_kind
            hi.called_computation_ids.append(fused_ids[instr.name])
        if instr.tf_op:
            hi.metadata.op_type = instr.opcode
            hi.metadata.op_name = instr.tf_op
            hi.metadata.source_file = instr.source.split(":")[0]
            hi.metadata.source_line = int(instr.source.split(":")[1])
    _assign_buffers(program, proto.buffer_assignment, ids)
    return proto.SerializeToString(deterministic=True)


def _assign_buffers(program: Program, ba, ids: dict[str, int]) -> None:
    instrs = program.instrs
    buffers = {
        instr.name: _Buffer(i + 1, instr, program.buffer_bytes(instr), instr.memory_space)
        for i, instr in enumerate(instrs)
    }
    last_use = {}
    for step, instr in enumerate(instrs):
        for o in instr.operands:
            last_use[o] = step
    live_out = set(program.outputs) | {instrs[-1].name}
    fixed = [i for i in instrs if i.opcode in ("parameter", "constant") or i.name in live_out]
    temp_names = {i.name for i in instrs} - {i.name for i in fixed}
    # Heap simulation, one trace and one temp allocation per memory colour.
    traces: dict[int, list[tuple[int, _Buffer, int]]] = {}
    free: dict[int, list[tuple[int, int]]] = {}
    refs: dict[int, int] = {}
    for step, instr in enumerate(instrs):
        if instr.name in temp_names:
            buf = buffers[instr.name]
            events = traces.setdefault(buf.color, [])
            holes = free.setdefault(buf.color, [(0, 1 << 62)])
            donor = buffers.get(instr.operands[0]) if instr.operands else None
            if (
                instr.opcode == "fusion"
                and instr.fusion_kind == "kLoop"
                and donor is not None
                and donor.instr.name in temp_names
                and last_use.get(donor.instr.name) == step
                and donor.size == buf.size
                and donor.color == buf.color
            ):
                buf.canonical, buf.offset = donor.canonical, donor.offset
                refs[buf.canonical] += 1
                events.append((SHARE_WITH, buf, buf.canonical))
            else:
                buf.canonical = buf.id
                buf.offset = _first_fit(holes, -(-buf.size // _ALIGN) * _ALIGN)
                refs[buf.id] = 1
                events.append((ALLOC, buf, 0))
            if instr.name not in last_use:  # nothing reads it
                _free(buf, events, refs, holes)
        for name in dict.fromkeys(instr.operands):
            if name in temp_names and last_use[name] == step:
                buf = buffers[name]
                _free(buf, traces[buf.color], refs, free[buf.color])
    for buf in buffers.values():
        loc = ba.logical_buffers.add(id=buf.id, size=buf.size, color=buf.color)
        loc.defined_at.instruction_name = buf.instr.name
        loc.defined_at.instruction_id = ids[buf.instr.name]
    index = 0
    for instr in fixed:
        buf = buffers[instr.name]
        alloc = ba.buffer_allocations.add(index=index, size=buf.size, color=buf.color)
        alloc.assigned.add(logical_buffer_id=buf.id, offset=0, size=buf.size)
        if instr.opcode == "parameter":
            alloc.is_entry_computation_parameter = True
            alloc.parameter_number = instr.parameter_number
        elif instr.opcode == "constant":
            alloc.is_constant = True
        else:
            alloc.maybe_live_out = True
            alloc.is_tuple = instr.opcode == "tuple"
        index += 1
    for color, events in sorted(traces.items()):
        members = sorted({b.id: b for _, b, _ in events}.values(), key=lambda b: b.id)
        size = max(b.offset + b.size for b in members)
        alloc = ba.buffer_allocations.add(
            index=index, size=-(-size // _ALIGN) * _ALIGN, color=color
        )
        for b in members:
            alloc.assigned.add(logical_buffer_id=b.id, offset=b.offset, size=b.size)
        trace = ba.heap_simulator_traces.add(
            buffer_allocation_index=index, whole_module_simulation=True
        )
        for kind, b, canonical in events:
            trace.events.add(
                kind=kind,
                buffer_id=b.id,
                computation_name=program.entry_name,
                instruction_name=b.instr.name,
                share_with_canonical_id=canonical,
            )
        index += 1


def _free(buf: _Buffer, events: list, refs: dict[int, int], holes: list) -> None:
    events.append((FREE, buf, 0))
    refs[buf.canonical] -= 1
    if refs[buf.canonical] == 0:
        _release(holes, buf.offset, -(-buf.size // _ALIGN) * _ALIGN)
