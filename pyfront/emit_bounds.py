"""Bounds checking (kernel(boundscheck=True), KAPI_BOUNDSCHECK=1): before an element access,
each index (after Numba's negative-index wraparound) is checked against its dimension's
extent, and an out-of-range one fails the work-item with KIR `raise` (an IndexError naming the
array, the index as written, the dimension and its extent, raised by call_kernel; see
emit_print.py and docs/kir.md)."""

# The raise site's first argument, which tells the launcher (kapi/_kernel/dispatcher.py
# BOUNDS_SITE) to
# fill {index} and {extent} of the second from the values the work-item recorded.
BOUNDS_SITE = "kapi.boundscheck"


class BoundsCheckEmitter:
    """Mixed into FunctionEmitter: checks of array indices when the module asks for them."""

    def check_index(self, arr, d, i, raw):
        """Emit `0 <= i < dim(arr, d)` for i64 index ref `i`, raising IndexError when false.
        One unsigned compare covers both ends (a negative i64 is a huge u64). `raw`: the i64
        ref of the index before the wraparound, which the message shows."""
        if not getattr(self.module, "boundscheck", False):
            return
        ln = self.line
        extent = self.b.op(f"dim i64 {arr.ref} {d}", ln)
        ui = self.b.op(f"cast u64 {i}", ln)
        ue = self.b.op(f"cast u64 {extent}", ln)
        ok = self.b.op(f"cmp bool lt {ui} {ue}", ln)
        n = self.b.value()[1:]
        name = _array_name(arr.ref)
        msg = f"index {{index}} is out of bounds for {name} (dimension {d}, extent {{extent}})"
        site = self.module.raise_site(IndexError, (BOUNDS_SITE, msg), self.tf.filename, ln)
        self.b.emit(f"cbr {ok} ^bounds.{n}.ok ^bounds.{n}.fail", ln)
        self.b.block(f"bounds.{n}.fail")
        self.b.emit(f"raise {site} {raw} {extent}", ln)
        self.b.block(f"bounds.{n}.ok")


def _array_name(ref):
    """How a message names the array behind KIR ref `ref`: its parameter's name, or (a value
    number) an array the function made itself, such as a PrivateArray."""
    name = ref.removeprefix("%")
    if name[:1].isdigit():
        return "a private array"
    return f"array '{name}'"
