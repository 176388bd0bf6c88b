"""Splitting a FAERS file's lines into ``$`` fields in one pass over its bytes (a compiled kernel).

Source: the reading rules of :mod:`faers_anon.io.faers_ascii` (its module docstring), which the
kernel reproduces for a valid UTF-8 file exactly as polars' line reader and ``str.split`` give them:
physical line numbers (header = 1); a line's text ends at its ``\\n`` or at its first NUL byte
(polars' line reader splits on NUL), less one ``\\r`` before that end; an empty text is a blank line
(skipped, counted); field ``i`` of ``text.split("$")`` is null beyond the row's field count; the
surplus of a row failing ``no_extra_fields`` is the text after the header width's ``$``.

Decision (speed): the polars path splits each line into a list of new strings and takes each field
out of it (the 400k quarter's DRUG, 1.76 M lines × 20 fields: ≈ 1.4 CPU-s); this kernel (≈ 0.6) writes
each field's Arrow string *view* (16 bytes: the length and up to 12 bytes inline, else a prefix and the
offset into the file's mapped bytes), which polars takes as they are. Used for files of
:data:`faers_anon.io.faers_ascii.KERNEL_MIN_BYTES` or more; tests check both paths give the same frame.

Decision (compiler): the kernel is LLVM IR built with llvmlite (:func:`_split_module`), compiled by
LLVM's JIT once per process (:func:`_kernel`, ≈ 0.1 CPU-s) and called through ctypes (GIL released). As
a numba function (the same views and speed) it cost each ingest ≈ 0.85 CPU-s on one core first: numba's
import, its CPU target and ``scipy.linalg`` (docs/scale.md, tenth round).

Decision (scan): only ``$``, ``\\n`` and NUL change the split's state, so the kernel finds them 64
bytes at a time (a vector compare per byte value, a 64-bit mask, its set bits in order) and reads a
field's inline bytes by two unaligned loads: the 400k quarter's five large files ≈ −0.3 CPU-s (DRUG
0.65 → 0.49), the same views as numba's kernel on DRUG and 4,000 fuzzed files (tenth round).

Decision (memory): views and line numbers go to private anonymous maps (:func:`_zeros`); the huge pages
of ``np.zeros`` (``MADV_HUGEPAGE``) are backed afresh by the VM's host, to which free memory is reported
(``page_reporting_order=11``): the 400k quarter's large files 1.4–2.5 → 0.4–0.5 system CPU-s.
"""

from __future__ import annotations

import ctypes
import mmap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl
import pyarrow as pa
from llvmlite import ir

__all__ = ["MAX_BYTES", "compile_soon", "split_file"]

#: Largest file the kernel reads: a view's offset is 32-bit.
MAX_BYTES: Final = (1 << 31) - 1
_DOLLAR, _LF, _CR, _NUL = 36, 10, 13, 0
_BLOCK = 64  # bytes compared at once: bit k of a 64-bit mask
_I8, _I32, _I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
#: The kernel's C signature: data, n_bytes, start, width, slot, views, lines, extra, out -> rows.
_SIGNATURE = ctypes.CFUNCTYPE(
    ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
)  # fmt: skip


def _count_lines(data: np.ndarray, start: int) -> int:
    """Lines from byte ``start`` on (a last line without ``\\n`` counts).

    numpy's compare and count, 4 MiB at a time (no large temporary): 0.035 CPU-s for the realistic
    400k quarter's DRUG (160 MB), against 0.09 for a compiled loop.
    """
    step = 1 << 22
    chunks = range(start, data.shape[0], step)
    return 1 + sum(int(np.count_nonzero(data[i : i + step] == _LF)) for i in chunks)


def _c(value: int) -> ir.Constant:
    return ir.Constant(_I64, value)


class _Locals:
    """The i64 local variables of one IR function, as stack slots (LLVM's SROA makes them registers):
    ``v.name`` loads one, ``v.set(name=value)`` stores."""

    def __init__(self, b: ir.IRBuilder, **initial: ir.Value | int) -> None:
        self._b, self._slots = b, {name: b.alloca(_I64, name=name) for name in initial}
        self.set(**initial)

    def __getattr__(self, name: str) -> ir.Value:
        return self._b.load(self._slots[name], name=name)

    def set(self, **values: ir.Value | int) -> None:
        for name, value in values.items():
            self._b.store(value if isinstance(value, ir.Value) else _c(value), self._slots[name])


@contextmanager
def _while(b: ir.IRBuilder, condition: Callable[[], ir.Value]) -> Iterator[ir.Block]:
    """``while condition(): <body>``; yields the loop's exit block (``break``: a branch to it)."""
    head, body, done = (b.append_basic_block(name) for name in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(condition(), body, done)
    b.position_at_end(body)
    yield done
    if b.block.terminator is None:
        b.branch(head)
    b.position_at_end(done)


def _byte(b: ir.IRBuilder, data: ir.Value, index: ir.Value) -> ir.Value:
    """``data[index]`` as an i64."""
    return b.zext(b.load(b.gep(data, [index])), _I64)


def _load(b: ir.IRBuilder, data: ir.Value, index: ir.Value, kind: ir.IntType) -> ir.Value:
    """The ``kind``-wide little-endian word at byte ``data[index]`` (an unaligned load), as an i64."""
    word = b.load(b.bitcast(b.gep(data, [index]), kind.as_pointer()), align=1)
    return word if kind is _I64 else b.zext(word, _I64)


def _low_bytes(b: ir.IRBuilder, count: ir.Value) -> ir.Value:
    """A mask of the low ``count`` bytes of an i64, ``count`` in [0, 8]."""
    bits = b.mul(count, _c(8))
    return b.select(b.icmp_signed(">=", bits, _c(64)), _c(-1), b.sub(b.shl(_c(1), bits), _c(1)))


def _view_function(module: ir.Module) -> ir.Function:
    """``view(data, n_bytes, a, z, dst)``: the Arrow view of ``data[a:z]`` as two little-endian words at
    ``dst``: (length | 4 bytes << 32, 8 bytes inline) when at most 12 bytes long, else (length |
    prefix << 32, buffer 0 | offset ``a`` << 32). The bytes are read by two unaligned loads (4 and 8
    bytes from ``a``) masked to the length, or one by one where these would pass the data's end."""
    kind = ir.FunctionType(ir.VoidType(), [_I8.as_pointer(), _I64, _I64, _I64, _I64.as_pointer()])
    fn = ir.Function(module, kind, "view")
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    data, n_bytes, a, z, dst = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    n = b.sub(z, a)
    v = _Locals(b, w0=n, w1=0, t=0)
    first = b.select(b.icmp_signed("<", n, _c(4)), n, _c(4))
    with b.if_else(b.icmp_signed("<=", b.add(a, _c(12)), n_bytes)) as (loads, one_by_one):
        with loads:
            rest = b.sub(b.select(b.icmp_signed("<", n, _c(12)), n, _c(12)), _c(4))
            inline = b.select(b.icmp_signed("<", rest, _c(0)), _c(0), rest)
            prefix = b.and_(_load(b, data, a, _I32), _low_bytes(b, first))
            v.set(w0=b.or_(n, b.shl(prefix, _c(32))))
            v.set(w1=b.and_(_load(b, data, b.add(a, _c(4)), _I64), _low_bytes(b, inline)))
        with one_by_one:
            with _while(b, lambda: b.icmp_signed("<", v.t, first)):
                t = v.t
                shift = b.add(_c(32), b.mul(_c(8), t))
                v.set(w0=b.or_(v.w0, b.shl(_byte(b, data, b.add(a, t)), shift)), t=b.add(t, _c(1)))
            with b.if_then(b.icmp_signed("<=", n, _c(12))):
                v.set(t=4)
                with _while(b, lambda: b.icmp_signed("<", v.t, n)):
                    t = v.t
                    shift = b.mul(_c(8), b.sub(t, _c(4)))
                    v.set(w1=b.or_(v.w1, b.shl(_byte(b, data, b.add(a, t)), shift)), t=b.add(t, _c(1)))
    with b.if_then(b.icmp_signed(">", n, _c(12))):
        v.set(w1=b.shl(a, _c(32)))
    b.store(v.w0, dst)
    b.store(v.w1, b.gep(dst, [_c(1)]))
    b.ret_void()
    return fn


def _is_special(b: ir.IRBuilder, byte: ir.Value) -> ir.Value:
    """``byte`` (i64) is ``$``, ``\\n`` or NUL: the bytes the split acts on (every other byte is text)."""
    return b.or_(
        b.or_(b.icmp_signed("==", byte, _c(_DOLLAR)), b.icmp_signed("==", byte, _c(_LF))),
        b.icmp_signed("==", byte, _c(_NUL)),
    )


def _special_mask(b: ir.IRBuilder, data: ir.Value, base: ir.Value) -> ir.Value:
    """Bit ``k`` of the i64 set where ``data[base + k]`` is special (:func:`_is_special`), k < 64: one
    unaligned vector load and three vector compares."""
    block = ir.VectorType(_I8, _BLOCK)
    bytes_ = b.load(b.bitcast(b.gep(data, [base]), block.as_pointer()), align=1)
    hits = [b.icmp_unsigned("==", bytes_, ir.Constant(block, [c] * _BLOCK)) for c in (_DOLLAR, _LF, _NUL)]
    return b.bitcast(b.or_(b.or_(hits[0], hits[1]), hits[2]), _I64)


def _split_module() -> ir.Module:
    """The IR of ``split(data, n_bytes, start, width, slot, views, lines, extra, out) -> rows``.

    Splits the lines of ``data[:n_bytes]`` from byte ``start`` (line 2). ``slot[f]``: the output column
    of header field ``f`` (-1: not kept). Per row, into zeroed arrays: the view of each kept field
    present at ``views[slot[f], row]`` (``views`` is C-ordered ``(columns, lines, 2)``), of the surplus
    fields at ``views[extra, row]`` (only when they fail ``no_extra_fields``), the line number at
    ``out[0, row]`` and the field count at ``out[1, row]`` (``out`` is ``(2, lines)`` of uint32).
    """
    module = ir.Module(name="faers_split")
    view = _view_function(module)
    p8, p32, p64 = _I8.as_pointer(), _I32.as_pointer(), _I64.as_pointer()
    kind = ir.FunctionType(_I64, [p8, _I64, _I64, _I64, p64, p64, _I64, _I64, p32])
    fn = ir.Function(module, kind, "split")
    data, n_bytes, start, width, slot, views, lines, extra, out = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    v = _Locals(b, i=start, row=0, line=2, f=0, begin=0, surplus=0, stop=0, p=0, base=0, mask=0)

    def put(column: ir.Value, a: ir.Value, z: ir.Value) -> None:
        index = b.mul(b.add(b.mul(column, lines), v.row), _c(2))
        b.call(view, [data, n_bytes, a, z, b.gep(views, [index])])

    def put_field(a: ir.Value, z: ir.Value) -> None:  # field f, if it is within the width and kept
        with b.if_then(b.icmp_signed("<", v.f, width)):
            column = b.load(b.gep(slot, [v.f]))
            with b.if_then(b.icmp_signed(">=", column, _c(0))):
                put(column, a, z)

    def finish_line(end: ir.Value) -> None:  # the line from i ends at end (its "\n" or the data's end)
        i = v.i
        with b.if_then(b.icmp_signed("<", v.stop, _c(0))):
            v.set(stop=end)
        with b.if_then(b.icmp_signed(">", v.stop, i)):
            with b.if_then(b.icmp_signed("==", _byte(b, data, b.sub(v.stop, _c(1))), _c(_CR))):
                v.set(stop=b.sub(v.stop, _c(1)))
        with b.if_then(b.icmp_signed(">", v.stop, i)):  # not blank: a row
            put_field(v.begin, v.stop)
            f = b.add(v.f, _c(1))
            v.set(f=f)
            trailing = b.and_(  # one more field than the header, empty: a trailing "$"
                b.icmp_signed("==", f, b.add(width, _c(1))),
                b.icmp_signed("==", _byte(b, data, b.sub(v.stop, _c(1))), _c(_DOLLAR)),
            )
            with b.if_then(b.and_(b.icmp_signed(">", f, width), b.not_(trailing))):
                put(extra, v.surplus, v.stop)
            row = v.row
            b.store(b.trunc(v.line, _I32), b.gep(out, [row]))
            b.store(b.trunc(f, _I32), b.gep(out, [b.add(lines, row)]))
            v.set(row=b.add(row, _c(1)))
        next_line = b.add(end, _c(1))
        v.set(line=b.add(v.line, _c(1)), i=next_line, f=0, begin=next_line, surplus=next_line, stop=-1)

    v.set(begin=start, surplus=start, stop=-1, base=start, mask=0)
    with _while(b, lambda: b.icmp_signed("<", v.base, n_bytes)):  # 64 bytes per pass
        base = v.base
        with b.if_else(b.icmp_signed("<=", b.add(base, _c(_BLOCK)), n_bytes)) as (whole, tail):
            with whole:
                v.set(mask=_special_mask(b, data, base))
            with tail:
                v.set(mask=0, p=base)
                with _while(b, lambda: b.icmp_signed("<", v.p, n_bytes)):
                    p = v.p
                    bit = b.zext(_is_special(b, _byte(b, data, p)), _I64)
                    v.set(mask=b.or_(v.mask, b.shl(bit, b.sub(p, base))), p=b.add(p, _c(1)))
        with _while(b, lambda: b.icmp_unsigned("!=", v.mask, _c(0))):  # each "$", "\n", NUL in order
            mask = v.mask
            p = b.add(base, b.cttz(mask, ir.Constant(ir.IntType(1), 1)))
            v.set(mask=b.and_(mask, b.sub(mask, _c(1))))
            byte = _byte(b, data, p)
            with b.if_else(b.icmp_signed("==", byte, _c(_DOLLAR))) as (dollar, other):
                with dollar, b.if_then(b.icmp_signed("<", v.stop, _c(0))):
                    put_field(v.begin, p)
                    f = b.add(v.f, _c(1))
                    v.set(f=f, begin=b.add(p, _c(1)))
                    with b.if_then(b.icmp_signed("==", f, width)):
                        v.set(surplus=v.begin)
                with other, b.if_else(b.icmp_signed("==", byte, _c(_LF))) as (newline, nul):
                    with newline:
                        finish_line(p)
                    with nul, b.if_then(b.icmp_signed("<", v.stop, _c(0))):
                        v.set(stop=p)
        v.set(base=b.add(base, _c(_BLOCK)))
    with b.if_then(b.icmp_signed("<", v.i, n_bytes)):  # a last line without "\n"
        finish_line(n_bytes)
    b.ret(v.row)
    return module


_COMPILING = threading.Lock()
_COMPILED: list[Any] = []  # the execution engine (owns the machine code) and the callable
_STARTED: list[threading.Thread] = []  # the compile started ahead by :func:`compile_soon`, once
_STARTING = threading.Lock()


def compile_soon() -> None:
    """Start compiling the kernel ahead, once per process: its Python part here, LLVM's passes and
    machine code (ctypes calls, the GIL released) in a thread, which :func:`_kernel` waits for. A
    failure raises nothing here: the split's own call compiles again and raises.

    Decision (issue 16 item 3): started when the first large file is made local (``local_files``), LLVM's
    part (≈ 0.08 CPU-s) runs beside the start instead of the first splits waiting for it; the Python part
    (≈ 0.04 s) stays on the caller's thread (in the thread it held the GIL the start needed).
    """
    with _STARTING:  # not _COMPILING, which the compile holds until it is done
        if _STARTED or _COMPILED:
            return
        try:
            parsed = _parsed()
        except Exception:  # the split's own call compiles again and raises
            parsed = None
        _STARTED.append(threading.Thread(target=_compile_quietly, args=(parsed,), daemon=True))
        _STARTED[0].start()


def _compile_quietly(parsed: tuple[Any, Any] | None) -> None:
    with _COMPILING:
        if _COMPILED or parsed is None:
            return
        try:
            _machine_code(*parsed)
        except Exception:  # the split's own call compiles again and raises
            pass


def _parsed() -> tuple[Any, Any]:
    """The kernel's module parsed by LLVM, and the host's target machine (llvmlite imported here)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2
    )
    module = llvm.parse_assembly(str(_split_module()))
    module.verify()
    return module, machine


def _machine_code(module: Any, machine: Any) -> None:
    """Optimize ``module`` (O2), make its machine code and keep the callable in :data:`_COMPILED`."""
    import llvmlite.binding as llvm

    passes = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=2))
    passes.getModulePassManager().run(module, passes)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    _COMPILED.extend([engine, _SIGNATURE(engine.get_function_address("split"))])


def _kernel() -> Callable[..., int]:
    """The compiled ``split`` of :func:`_split_module`: compiled once per process (here, or by the
    thread of :func:`compile_soon`, which this waits for)."""
    with _COMPILING:
        if not _COMPILED:
            _machine_code(*_parsed())
        return _COMPILED[-1]  # type: ignore[no-any-return]


def _column(views: np.ndarray, valid: np.ndarray | None, data: pa.Buffer) -> pl.Series:
    """One Utf8 column of views over ``data``; ``valid`` None when no value is null."""
    rows = views.shape[0]
    nulls = 0 if valid is None else rows - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls and valid is not None else None
    array = pa.Array.from_buffers(
        pa.string_view(), rows, [bitmap, pa.py_buffer(views), data], null_count=nulls
    )
    return pl.Series(array)


def _zeros(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """``np.zeros(shape, dtype)`` in a private anonymous map of its own (4 KiB pages; module docstring)."""
    size, flags = int(np.prod(shape)), mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    memory = mmap.mmap(-1, max(size * np.dtype(dtype).itemsize, 1), flags=flags)
    return np.frombuffer(memory, dtype=dtype, count=size).reshape(shape)


def split_file(path: Path, width: int, fields: dict[str, int]) -> pl.DataFrame:
    """The data lines of a valid UTF-8 file of at most :data:`MAX_BYTES` split on ``$``.

    Args:
        path: the file; its first line (the header) is skipped.
        width: the header's field count.
        fields: output column → its field index in the header.

    Returns:
        ``line`` (Int64), the ``fields`` columns (Utf8; null beyond a row's field count),
        ``_count`` (UInt32, the row's fields) and ``_surplus`` (Utf8: the text after the
        ``width``-th ``$`` of a row failing ``no_extra_fields``, else null); one row per non-blank line.
    """
    with path.open("rb") as stream:
        start = len(stream.readline())  # the header line with its newline
    mapped = pa.memory_map(str(path), "r")
    buffer = mapped.read_buffer()
    data = np.frombuffer(buffer, dtype=np.uint8)
    slot = np.full(max(width, 1), -1, dtype=np.int64)
    for c, f in enumerate(fields.values()):
        slot[f] = c
    lines = _count_lines(data, start) if start < data.shape[0] else 0
    views = _zeros((len(fields) + 1, lines, 2), np.uint64)
    out = _zeros((2, lines), np.uint32)
    rows = 0
    if lines:
        arrays = (data, slot, views, out)
        pointers = [a.ctypes.data for a in arrays]
        rows = _kernel()(pointers[0], data.shape[0], start, width, pointers[1], pointers[2], lines,
                         len(fields), pointers[3])  # fmt: skip
    count = out[1, :rows]
    fewest = int(count.min()) if rows else width
    columns = [
        _column(views[c, :rows], count > f if f >= fewest else None, buffer).alias(name)
        for c, (name, f) in enumerate(fields.items())
    ]
    surplus = views[-1, :rows]
    extra = _column(surplus, (surplus[:, 0] & np.uint64(0xFFFFFFFF)) > 0, buffer)
    return pl.DataFrame(
        [
            pl.Series("line", out[0, :rows]).cast(pl.Int64),
            *columns,
            pl.Series("_count", count),
            extra.alias("_surplus"),
        ]
    )
