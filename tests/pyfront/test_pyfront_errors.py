"""pyfront: bad kernels raise KernelErrors naming the construct at the kernel's file:line."""

import numpy as np
import pytest
from kapi_testing import line_of

import pyfront
from pyfront import KernelError, KernelTypingError, UnsupportedConstructError

A1 = "array(f32,1,C,global)"
HERE = __file__


def compile_err(fn, args=(A1,), index=("item", 1), cls=KernelError):
    with pytest.raises(cls) as ei:
        pyfront.compile_kernel(fn, list(args), index=index)
    err = ei.value
    assert str(err).startswith(f"{err.filename}:{err.lineno}: error: ")
    assert "Traceback" not in str(err) and "numba" not in str(err).lower().split("error:")[0]
    return err


def test_list_is_unsupported_at_its_line():
    def k(item, x):
        v = [1.0, 2.0]
        x[0] = v[0]

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "list" and "list" in str(err)
    assert err.filename == HERE and err.lineno == line_of(k, "v = [")


def test_dict_is_unsupported():
    def k(item, x):
        d = {1: 2.0}
        x[0] = d[1]

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "dict" and err.lineno == line_of(k, "d = {")


def test_string_is_unsupported():
    def k(item, x):
        s = "abc"
        x[0] = len(s)

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "string"


def test_print_keywords_other_than_constant_sep_and_end_are_unsupported():
    def k(item, x):
        print(x[0], flush=True)

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.lineno == line_of(k, "print(") and "sep= and end=" in str(err)


def _plain_helper(v):
    return v + 1


def test_call_to_unknown_function_names_it():
    def k(item, x):
        x[0] = _plain_helper(x[0])

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "call" and "_plain_helper" in str(err)
    assert err.lineno == line_of(k, "_plain_helper(")


def test_call_to_numpy_function_is_unsupported():
    def k(item, x):
        x[0] = np.sum(x)

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.lineno == line_of(k, "np.sum")


def _fact(n):
    if n <= 1:
        return 1
    return n * _fact(n - 1)


_fact.__kapi_device_func__ = True


def test_recursion_is_rejected():
    def k(item, x, n):
        x[0] = _fact(n)

    err = compile_err(k, (A1, "i64"), cls=UnsupportedConstructError)
    assert err.construct == "recursion" and "_fact" in str(err)


def test_try_except_is_unsupported():
    def k(item, x):
        try:
            x[0] = 1.0
        except Exception:
            x[0] = 2.0

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "try"


def test_generator_is_unsupported():
    def k(item, x):
        yield x[0]

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "generator"


def test_raise_of_a_run_time_value_is_unsupported():
    def k(item, x):
        if x[0] < 0:
            raise ValueError(x[0])

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "raise" and err.lineno == line_of(k, "raise ")


def test_typing_error_is_short_and_located():
    def k(item, x):
        x[0] = x + (1, 2)

    err = compile_err(k, cls=KernelTypingError)
    assert err.lineno == line_of(k, "x + (1, 2)")
    assert "During:" not in str(err) and "\n" not in str(err)


def test_bad_argument_type_names_the_argument():
    def k(item, a, b):
        b[0] = a

    err = compile_err(k, ("f33", A1), cls=KernelTypingError)
    assert "argument 'a'" in str(err) and err.lineno == k.__code__.co_firstlineno
    err = compile_err(k, ("f32", "array(f32,9,C,global)"), cls=KernelTypingError)
    assert "argument 'b'" in str(err)


def test_argument_count_mismatch():
    def k(item, a, b):
        b[0] = a

    err = compile_err(k, (A1,), cls=KernelTypingError)
    assert "2 argument" in str(err) or "parameters" in str(err)


def test_kernel_returning_a_value():
    def k(item, x):
        return x[0]

    err = compile_err(k, cls=KernelTypingError)
    assert "return" in str(err)


def test_other_python_constructs_never_leak_numba_errors():
    def with_block(item, x):
        with open("f"):
            x[0] = 1

    def closure(item, x):
        f = lambda v: v + 1  # noqa: E731
        x[0] = f(x[0])

    def comprehension(item, x):
        x[0] = sum([v for v in range(3)])

    def objects(item, x):
        x[0] = object()

    def star(item, *xs):
        xs[0][0] = 1

    for fn in (with_block, closure, comprehension, objects):
        compile_err(fn)
    compile_err(star, cls=UnsupportedConstructError)


def test_local_accessor_must_be_c_layout():
    def k(nd, loc):
        loc[0] = 1

    err = compile_err(k, ("array(f32,1,F,local)",), index=("nditem", 1), cls=KernelTypingError)
    assert "argument 'loc'" in str(err)


def test_bad_index_argument_and_non_function():
    def k(item, x):
        x[0] = 1

    with pytest.raises(ValueError):
        pyfront.compile_kernel(k, [A1], index=("item", 4))
    with pytest.raises(UnsupportedConstructError):
        pyfront.compile_kernel(len, [A1])


def test_dimension_out_of_range():
    def k(item, x):
        x[0] = item.get_id(1)

    err = compile_err(k, cls=KernelTypingError)
    assert "dimension 1" in str(err) and err.lineno == line_of(k, "get_id(1)")


def _bad_device(v):
    return v + (1, 2)


_bad_device.__kapi_device_func__ = True


def test_typing_error_inside_a_device_function_points_into_it():
    def k(item, x):
        x[0] = _bad_device(x[0])

    err = compile_err(k, cls=KernelTypingError)
    assert err.filename == HERE and err.lineno == line_of(_bad_device, "v + (1, 2)")


def test_type_error_on_an_argument_names_it():
    def k(item, x, y):
        y[0] = x[0]  # x is a scalar

    err = compile_err(k, ("f32", A1), cls=KernelTypingError)
    assert "getitem(float32" in str(err) and "argument 'x' is float32" in str(err)
    assert err.lineno == line_of(k, "y[0] = x[0]")


# -- messages that name the mistake, at its line, and what to do ---------------------------


def test_list_comprehension_is_named_at_its_line():
    def k(item, x):
        i = item.get_id(0)
        b = [j for j in range(3)]
        x[i] = b[0]

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "comprehension" and err.lineno == line_of(k, "b = [")
    assert "list comprehensions are not supported" in str(err) and "PrivateArray" in str(err)
    assert "lambda" not in str(err)


def test_generator_expression_and_lambda_are_named():
    def gen(item, x):
        x[0] = sum(v for v in range(3))

    def lam(item, x):
        f = lambda v: v + 1  # noqa: E731
        x[0] = f(x[0])

    err = compile_err(gen, cls=UnsupportedConstructError)
    assert "generator expressions" in str(err) and err.lineno == line_of(gen, "sum(v for")
    err = compile_err(lam, cls=UnsupportedConstructError)
    assert "lambdas" in str(err) and "@kapi.device_func" in str(err)
    assert err.lineno == line_of(lam, "f = lambda")


def test_with_block_is_reported_at_the_with_line():
    # `with ... as` failed in Numba's bytecode analysis: at the def line, "Raised from None"
    def k(item, x):
        i = item.get_id(0)
        with open("f") as f:
            x[i] = len(f)

    err = compile_err(k, cls=UnsupportedConstructError)
    assert err.construct == "with" and err.lineno == line_of(k, "with open")
    assert "Raised from" not in str(err) and "call_kernel" in str(err)


def test_typing_error_names_only_the_argument_it_is_about():
    def k(item, a, b):
        i = item.get_id(0)
        a[i] = b.foo

    err = compile_err(k, (A1, A1), cls=KernelTypingError)
    assert "Unknown attribute 'foo'" in str(err) and err.lineno == line_of(k, "b.foo")
    assert "argument 'b'" in str(err) and "'a'" not in str(err)


def test_typing_error_names_no_bystander_argument():
    def k(item, a, n):
        i = item.get_id(0)
        a[i] = n + (1, 2)

    err = compile_err(k, (A1, "i64"), cls=KernelTypingError)
    assert "argument 'n' is int64" in str(err)
    assert "'a' is" not in str(err), "a is on the line, but the error is not about it"
