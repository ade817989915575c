"""KIR for sub-groups and group algorithms (typed in typing_group.py).

NdItem.get_sub_group() is an index-space value like get_group(); its queries are the `sg_*`
instructions, shuffles are `sg_shuffle*`, and the collectives over a Group or a SubGroup are
`group_*` instructions whose scope (work_group / sub_group) comes from the group argument.
"""

from kapi_lang import kernel_api as K

from . import values as V
from ._numba import types

SCOPES = {"Group": "work_group", "SubGroup": "sub_group"}
GROUP_OPS = {int(op): op.name.lower() for op in K.GroupOp}

SUB_GROUP_QUERIES = {
    "get_local_id": "sg_local_id",
    "get_local_linear_id": "sg_local_id",
    "get_local_range": "sg_local_range",
    "get_local_linear_range": "sg_local_range",
    "get_max_local_range": "sg_max_range",
    "get_group_id": "sg_group_id",
    "get_group_linear_id": "sg_group_id",
    "get_group_range": "sg_group_range",
    "get_group_linear_range": "sg_group_range",
}

SHUFFLES = {
    K.select_from_group: ("sg_shuffle", "remote_local_id"),
    K.shuffle: ("sg_shuffle", "src_local_id"),
    K.shift_group_left: ("sg_shuffle_down", "delta"),
    K.shuffle_down: ("sg_shuffle_down", "delta"),
    K.shift_group_right: ("sg_shuffle_up", "delta"),
    K.shuffle_up: ("sg_shuffle_up", "delta"),
    K.permute_group_by_xor: ("sg_shuffle_xor", "mask"),
    K.shuffle_xor: ("sg_shuffle_xor", "mask"),
}

ALGORITHMS = {
    K.reduce_over_group: "group_reduce",
    K.inclusive_scan_over_group: "group_inclusive_scan",
    K.exclusive_scan_over_group: "group_exclusive_scan",
}


def sub_group_method(em, obj, attr):
    """NdItem.get_sub_group() and SubGroup queries."""
    if obj.kind == "NdItem":
        return V.IndexSpace("SubGroup", 1)
    op = SUB_GROUP_QUERIES.get(attr)
    if op is None:
        raise em.unsupported("call", f"SubGroup.{attr}() is not supported in kernels")
    return V.Scalar(em.b.op(f"{op} i64", em.line), types.int64, True)


def sub_group_leader(em):
    lid = em.b.op("sg_local_id i64", em.line)
    zero = em.scalar(V.Const(0, types.int64))
    return V.Scalar(em.b.op(f"cmp bool eq {lid} {zero}", em.line), types.boolean)


def _sub_group_barrier(em, args, kws, sig):
    em.b.emit("sg_barrier", em.line)
    return V.Static(None)


def _shuffle(pyfunc):
    op, third = SHUFFLES[pyfunc]

    def emit(em, args, kws, sig):
        b = em.bind_values(pyfunc, args, kws)
        ret = types.unliteral(sig.return_type)
        x = em.scalar(b["x"], ret)
        n = em.scalar(b[third], types.int64)
        return V.Scalar(em.b.op(f"{op} {em.kty(ret)} {x} {n}", em.line), ret)

    return emit


def _group_scope(em, g, fname):
    if not isinstance(g, V.IndexSpace) or g.kind not in SCOPES:
        raise em.typing_error(f"{fname}(): the first argument must be a Group or a SubGroup")
    return SCOPES[g.kind]


def _group_broadcast(em, args, kws, sig):
    b = em.bind_values(K.group_broadcast, args, kws)
    scope = _group_scope(em, b["group"], "group_broadcast")
    ret = types.unliteral(sig.return_type)
    x = em.scalar(b["x"], ret)
    lid = em.scalar(b["local_linear_id"], types.int64)
    return V.Scalar(em.b.op(f"group_broadcast {em.kty(ret)} {scope} {x} {lid}", em.line), ret)


def _algorithm(pyfunc):
    kir_op = ALGORITHMS[pyfunc]

    def emit(em, args, kws, sig):
        name = pyfunc.__name__
        b = em.bind_values(pyfunc, args, kws)
        scope = _group_scope(em, b["group"], name)
        op = GROUP_OPS.get(em.const_value(b["op"], f"{name} op"))
        if op is None:
            raise em.typing_error(f"{name}(): op must be a GroupOp")
        ret = types.unliteral(sig.return_type)
        if op in ("and", "or", "xor") and not isinstance(ret, types.Integer):
            raise em.typing_error(f"{name}(): GroupOp.{op.upper()} needs an integer x, not {ret}")
        x = em.scalar(b["x"], ret)
        return V.Scalar(em.b.op(f"{kir_op} {em.kty(ret)} {op} {scope} {x}", em.line), ret)

    return emit


def _vote(pyfunc):
    def emit(em, args, kws, sig):
        b = em.bind_values(pyfunc, args, kws)
        scope = _group_scope(em, b["group"], pyfunc.__name__)
        p = em.scalar(b["pred"], types.boolean)
        op = "group_all" if pyfunc is K.all_of_group else "group_any"
        r = em.b.op(f"{op} bool {scope} {p}", em.line)
        if pyfunc is K.none_of_group:
            r = em.b.op(f"not bool {r}", em.line)
        return V.Scalar(r, types.boolean)

    return emit


GROUP_BUILTINS = {K.sub_group_barrier: _sub_group_barrier, K.group_broadcast: _group_broadcast}
GROUP_BUILTINS.update({f: _shuffle(f) for f in SHUFFLES})
GROUP_BUILTINS.update({f: _algorithm(f) for f in ALGORITHMS})
GROUP_BUILTINS.update({f: _vote(f) for f in (K.any_of_group, K.all_of_group, K.none_of_group)})
