# ruff: noqa: E501  (KIR fixtures keep one item per line, as the format requires)
"""The _kapi extension's compiler bindings: KIR text in, validated SPIR-V out, errors as
CompileError with the compiler's status and the user's file:line."""

import threading

import pytest

from kapi._lib import _kapi

SAXPY = """\
kir 1
kernel @saxpy(%a: f32, %x: array(f32,1,C,global), %y: array(f32,1,C,global)) -> void file "/home/u/saxpy.py" line 7 {
  var $i i64
^entry:
  %0 = global_id i64 0        #9
  store_var $i %0             #9
  %1 = load_var i64 $i        #10
  %2 = aload f32 %x %1        #10
  %3 = mul f32 %a %2          #10
  %4 = aload f32 %y %1        #10
  %5 = add f32 %3 %4          #10
  astore %y %5 %1             #10
  ret                         #10
}
"""

ATOMICS = """\
kir 1
kernel @hist(%data: array(i32,1,C,global), %bins: array(i32,1,C,global), %total: array(f32,1,C,global)) -> void file "h.py" line 3 {
^entry:
  %i = global_id i64 0                              #5
  %v = aload i32 %data %i                           #5
  %b = cast i64 %v                                  #5
  %c1 = const i32 1                                 #6
  %old = atomic_rmw i32 add relaxed device %bins %c1 %b  #6
  %f = cast f32 %v                                  #7
  %o2 = atomic_rmw f32 add seq_cst device %total %f %b   #7
  ret                                               #8
}
"""

LOCAL_BARRIER = """\
kir 1
kernel @rev(%a: array(f32,1,C,global), %tmp: array(f32,1,C,local)) -> void file "r.py" line 1 {
^entry:
  %g = global_id i64 0       #3
  %l = local_id i64 0        #4
  %n = local_range i64 0     #5
  %v = aload f32 %a %g       #6
  astore %tmp %v %l          #6
  barrier work_group         #7
  %one = const i64 1         #8
  %m = sub i64 %n %one       #8
  %r = sub i64 %m %l         #8
  %w = aload f32 %tmp %r     #8
  astore %a %w %g            #8
  ret                        #9
}
"""


def test_saxpy_compiles_to_valid_spirv():
    entry, llvm_ir, spirv = _kapi.compile_kir(SAXPY)
    assert entry == "saxpy"
    assert "spir_kernel" in llvm_ir and "spir64-unknown-unknown" in llvm_ir
    assert isinstance(spirv, bytes) and spirv[:4] == b"\x03\x02\x23\x07"
    _kapi.spirv_validate(spirv)
    text = _kapi.spirv_disassemble(spirv)
    assert "OpEntryPoint Kernel %" in text and '"saxpy"' in text
    assert "BuiltIn GlobalInvocationId" in text
    assert "OpCapability Float64" not in text


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_opt_levels(level):
    _, _, spirv = _kapi.compile_kir(SAXPY, opt_level=level)
    _kapi.spirv_validate(spirv)


def test_bad_opt_level():
    with pytest.raises(_kapi.CompileError) as e:
        _kapi.compile_kir(SAXPY, opt_level=7)
    assert e.value.status == "KC_ERR_INVALID_ARGUMENT"


def test_atomics_use_spirv_atomic_instructions():
    _, _, spirv = _kapi.compile_kir(ATOMICS)
    text = _kapi.spirv_disassemble(spirv)
    assert "OpAtomicIAdd" in text
    assert "OpAtomicFAddEXT" in text
    assert "SPV_EXT_shader_atomic_float_add" in text


def test_use_before_definition_is_a_kir_error():
    swapped = ATOMICS.replace("%c1 = const i32 1     ", "%c0 = const i32 1     ")
    with pytest.raises(_kapi.CompileError) as e:
        _kapi.compile_kir(swapped)
    assert e.value.status == "KC_ERR_KIR"
    assert str(e.value).startswith("h.py:6: error:")
    assert "%c1" in str(e.value)


def test_local_memory_and_barrier():
    _, _, spirv = _kapi.compile_kir(LOCAL_BARRIER)
    text = _kapi.spirv_disassemble(spirv)
    assert "OpControlBarrier" in text
    assert "Workgroup" in text  # the local array is a Workgroup pointer parameter
    assert "BuiltIn LocalInvocationId" in text and "BuiltIn WorkgroupSize" in text


def test_f64_only_when_used():
    _, _, f32 = _kapi.compile_kir(SAXPY)
    assert "OpCapability Float64" not in _kapi.spirv_disassemble(f32)
    _, _, f64 = _kapi.compile_kir(SAXPY.replace("f32", "f64"))
    assert "OpCapability Float64" in _kapi.spirv_disassemble(f64)


@pytest.mark.parametrize(
    "edit, status, message",
    [
        (("mul f32", "mull f32"), "KC_ERR_KIR", "/home/u/saxpy.py:10: error: unknown operation"),
        (("add f32 %3 %4", "add f64 %3 %4"), "KC_ERR_KIR", "/home/u/saxpy.py:10: error: add"),
        (
            ("  ret                         #10\n", ""),
            "KC_ERR_KIR",
            "does not end with a terminator",
        ),
        (("kir 1", "kir 2"), "KC_ERR_KIR", "<kir>:1: error:"),
    ],
)
def test_errors(edit, status, message):
    with pytest.raises(_kapi.CompileError) as e:
        _kapi.compile_kir(SAXPY.replace(*edit))
    assert e.value.status == status
    assert message in str(e.value)
    with pytest.raises(_kapi.CompileError):
        _kapi.kir_check(SAXPY.replace(*edit))


def test_kir_check_accepts_valid_kir():
    assert _kapi.kir_check(SAXPY) is None


def test_compile_error_is_an_exception():
    assert issubclass(_kapi.CompileError, Exception)


def test_spirv_validate_rejects_garbage():
    with pytest.raises(_kapi.CompileError) as e:
        _kapi.spirv_validate(b"\x03\x02\x23\x07" + b"\x00" * 16)
    assert e.value.status == "KC_ERR_SPIRV"
    with pytest.raises(_kapi.CompileError):
        _kapi.spirv_disassemble(b"abc")


def test_compiles_in_parallel_threads():
    """Compiles run without the GIL and share no LLVM state: results match serial ones."""
    sources = [SAXPY, ATOMICS, LOCAL_BARRIER] * 4
    serial = [_kapi.compile_kir(src)[2] for src in sources]
    results = [None] * len(sources)

    def work(k):
        results[k] = _kapi.compile_kir(sources[k])[2]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(sources))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == serial
