"""bfloat16 arrays: KIR has no bfloat16 type (SPIR-V has none without extensions), so a
bfloat16 array is a u16 array in KIR and its elements convert here, with integer operations
and `bitcast`: an element reads as float32 (its 16 bits are the top half of the float32's) and
a stored value rounds to the nearest bfloat16, ties to even. Typing sees a float32 array
(ktypes.KArray with storage "bf16").

A mixin of FunctionEmitter (emit.py).
"""

from . import values as V
from ._numba import types


class Bf16Emitter:
    """bfloat16 element loads and stores for FunctionEmitter."""

    def bf16_aload(self, arr, idx):
        """A bfloat16 element as float32: its 16 bits are the top half of the float32's."""
        h = self.b.op(f"aload u16 {arr.ref} {' '.join(idx)}", self.line)
        w = self.b.op(f"cast u32 {h}", self.line)
        s = self.b.op(f"shl u32 {w} {self.scalar(V.Const(16, types.uint32))}", self.line)
        return V.Scalar(self.b.op(f"bitcast f32 {s}", self.line), types.float32)

    def bf16_astore(self, arr, idx, val, op="astore"):
        """Store a float32 rounded to the nearest bfloat16, ties to even (as ml_dtypes does);
        NaN stays a (quiet) NaN of the same sign."""
        f = self.scalar(val, types.float32)
        u = lambda n: self.scalar(V.Const(n, types.uint32))  # noqa: E731
        bits = self.b.op(f"bitcast u32 {f}", self.line)
        top = self.b.op(f"shr u32 {bits} {u(16)}", self.line)
        lsb = self.b.op(f"and u32 {top} {u(1)}", self.line)
        bias = self.b.op(f"add u32 {lsb} {u(0x7FFF)}", self.line)
        rounded = self.b.op(f"add u32 {bits} {bias}", self.line)
        hi = self.b.op(f"shr u32 {rounded} {u(16)}", self.line)
        quiet = self.b.op(f"or u32 {top} {u(0x40)}", self.line)
        nan = self.b.op(f"math bool isnan {f}", self.line)
        r = self.b.op(f"select u32 {nan} {quiet} {hi}", self.line)
        h = self.b.op(f"cast u16 {r}", self.line)
        self.b.emit(f"{op} {arr.ref} {h} {' '.join(idx)}", self.line)
