"""Typing of sub-groups and group algorithms (kapi.kernel_api's SYCL 2020 names).

Registers into typing_registry's registry: NdItem.get_sub_group(), SubGroup queries, the
sub-group barrier and shuffles, and the collectives over a Group or a SubGroup. Their KIR is
emitted by emit_group.py.
"""

from kapi_lang import kernel_api as K

from . import _numba as nb
from .ktypes import GroupType, NdItemType, SubGroupType
from .typing_registry import _attr, _dim_method, _fail, _global, _is_enum, _sig_of, bind

types = nb.types

SUB_GROUP_METHODS = (
    "get_local_id",
    "get_local_linear_id",
    "get_local_range",
    "get_local_linear_range",
    "get_max_local_range",
    "get_group_id",
    "get_group_linear_id",
    "get_group_range",
    "get_group_linear_range",
)


@_attr
class NdItemSubGroupAttribute(nb.AttributeTemplate):
    key = NdItemType

    @nb.bound_function("NdItem.get_sub_group")
    def resolve_get_sub_group(self, ty, args, kws):
        if args or kws:
            _fail("NdItem.get_sub_group() takes no arguments")
        return nb.signature(SubGroupType(1))


def _sub_group_template():
    body = {"key": SubGroupType}
    for name in SUB_GROUP_METHODS:
        body[f"resolve_{name}"] = _dim_method("SubGroup", name, 0)
    body["resolve_dimensions"] = lambda self, ty: types.IntegerLiteral(1)
    body["resolve_leader"] = lambda self, ty: types.boolean
    return _attr(type("SubGroupAttributes", (nb.AttributeTemplate,), body))


_sub_group_template()


def _value_type(ty, fname, what="x"):
    ty = types.unliteral(ty)
    if not isinstance(ty, types.Number | types.Boolean) or isinstance(ty, types.Complex):
        _fail(f"{fname}(): {what} must be a boolean, integer or float scalar, not {ty}")
    return ty


def _check_sub_group(b, fname):
    sg = next(iter(b.values()))
    if not isinstance(sg, SubGroupType):
        _fail(f"{fname}(sub_group, ...): pass nd_item.get_sub_group(), not {sg}")


def _check_group(b, fname):
    g = next(iter(b.values()))
    if not isinstance(g, GroupType | SubGroupType):
        _fail(
            f"{fname}(group, ...): group must be nd_item.get_group() or nd_item.get_sub_group(), "
            f"not {g}"
        )


def _check_int(ty, fname, what):
    if not isinstance(types.unliteral(ty), types.Integer):
        _fail(f"{fname}(): {what} must be an integer, not {ty}")


@_global(K.sub_group_barrier)
class SubGroupBarrier(nb.AbstractTemplate):
    def generic(self, args, kws):
        b = bind(K.sub_group_barrier, args, kws)
        _check_sub_group(b, "sub_group_barrier")
        return _sig_of(types.none, b)


def _shuffle_template(pyfunc, third):
    class Shuffle(nb.AbstractTemplate):
        key = pyfunc

        def generic(self, args, kws):
            name = pyfunc.__name__
            b = bind(pyfunc, args, kws)
            _check_sub_group(b, name)
            ret = _value_type(b["x"], name)
            if third in b:
                _check_int(b[third], name, third)
            return _sig_of(ret, b)

    _global(pyfunc)(Shuffle)


for _f, _third in (
    (K.select_from_group, "remote_local_id"),
    (K.shift_group_left, "delta"),
    (K.shift_group_right, "delta"),
    (K.permute_group_by_xor, "mask"),
    (K.shuffle, "src_local_id"),
    (K.shuffle_down, "delta"),
    (K.shuffle_up, "delta"),
    (K.shuffle_xor, "mask"),
):
    _shuffle_template(_f, _third)


@_global(K.group_broadcast)
class GroupBroadcast(nb.AbstractTemplate):
    def generic(self, args, kws):
        b = bind(K.group_broadcast, args, kws)
        _check_group(b, "group_broadcast")
        ret = _value_type(b["x"], "group_broadcast")
        if "local_linear_id" in b:
            _check_int(b["local_linear_id"], "group_broadcast", "local_linear_id")
        return _sig_of(ret, b)


def _algorithm_template(pyfunc):
    class Algorithm(nb.AbstractTemplate):
        key = pyfunc

        def generic(self, args, kws):
            name = pyfunc.__name__
            b = bind(pyfunc, args, kws)
            _check_group(b, name)
            ret = _value_type(b["x"], name)
            if isinstance(ret, types.Boolean):
                _fail(f"{name}(): x must be an integer or float; use any_of_group/all_of_group")
            if not _is_enum(b["op"], K.GroupOp):
                _fail(
                    f"{name}(group, x, op): op must be a GroupOp (kapi.kernel_api.GroupOp.ADD...)"
                )
            return _sig_of(ret, b)

    _global(pyfunc)(Algorithm)


for _f in (K.reduce_over_group, K.inclusive_scan_over_group, K.exclusive_scan_over_group):
    _algorithm_template(_f)


def _vote_template(pyfunc):
    class Vote(nb.AbstractTemplate):
        key = pyfunc

        def generic(self, args, kws):
            b = bind(pyfunc, args, kws)
            _check_group(b, pyfunc.__name__)
            _value_type(b["pred"], pyfunc.__name__, "pred")
            return _sig_of(types.boolean, b)

    _global(pyfunc)(Vote)


for _f in (K.any_of_group, K.all_of_group, K.none_of_group):
    _vote_template(_f)
