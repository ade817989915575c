/* Python bindings of the forward compiler (kapi/compiler.h): compile_kir, kir_check,
 * spirv_validate, spirv_disassemble. The GIL is released while native code runs, so several
 * threads can compile kernels at once. */
#include "ext.h"
#include "fork.h"

/* Takes ownership of err (frees it). */
static PyObject *fail(kc_status_t st, char *err) {
  kapi_ext_raise_compile_error(st, err);
  kc_free(err);
  return NULL;
}

static PyObject *result_tuple(const kc_program_t *prog) {
  size_t n = 0;
  const void *spv = kc_program_spirv(prog, &n);
  return Py_BuildValue("(ssy#)", kc_program_entry(prog), kc_program_llvm_ir(prog),
                       (const char *)spv, (Py_ssize_t)n);
}

static PyObject *compile_kir(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)self;
  static char *kwlist[] = {"text", "opt_level", NULL};
  const char *text;
  Py_ssize_t len;
  int opt_level = 2;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s#|i:compile_kir", kwlist, &text, &len,
                                   &opt_level))
    return NULL;
  kc_options_t opts;
  kc_options_init(&opts);
  opts.opt_level = opt_level;
  kc_program_t *prog = NULL;
  char *err = NULL;
  PyThreadState *ts = kx_gil_release(); /* native work runs without the GIL */
  kc_status_t st = kc_compile(text, (size_t)len, &opts, &prog, &err);
  kx_gil_restore(ts);
  if (st != KC_OK) return fail(st, err);
  PyObject *r = result_tuple(prog);
  kc_program_destroy(prog);
  return r;
}

static PyObject *kir_check(PyObject *self, PyObject *arg) {
  (void)self;
  Py_ssize_t len;
  const char *text = PyUnicode_AsUTF8AndSize(arg, &len);
  if (!text) return NULL;
  char *err = NULL;
  PyThreadState *ts = kx_gil_release(); /* native work runs without the GIL */
  kc_status_t st = kc_kir_check(text, (size_t)len, &err);
  kx_gil_restore(ts);
  if (st != KC_OK) return fail(st, err);
  Py_RETURN_NONE;
}

static PyObject *spirv_validate(PyObject *self, PyObject *args) {
  (void)self;
  const char *spv;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "y#:spirv_validate", &spv, &n)) return NULL;
  char *err = NULL;
  PyThreadState *ts = kx_gil_release(); /* native work runs without the GIL */
  kc_status_t st = kc_spirv_validate(spv, (size_t)n, &err);
  kx_gil_restore(ts);
  if (st != KC_OK) return fail(st, err);
  Py_RETURN_NONE;
}

static PyObject *spirv_disassemble(PyObject *self, PyObject *args) {
  (void)self;
  const char *spv;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "y#:spirv_disassemble", &spv, &n)) return NULL;
  char *text = NULL, *err = NULL;
  PyThreadState *ts = kx_gil_release(); /* native work runs without the GIL */
  kc_status_t st = kc_spirv_disassemble(spv, (size_t)n, &text, &err);
  kx_gil_restore(ts);
  if (st != KC_OK) return fail(st, err);
  PyObject *r = PyUnicode_FromString(text);
  kc_free(text);
  return r;
}

static PyMethodDef compile_methods[] = {
    {"compile_kir", (PyCFunction)(void (*)(void))compile_kir, METH_VARARGS | METH_KEYWORDS,
     "compile_kir(text, opt_level=2) -> (entry, llvm_ir, spirv): KIR text to SPIR-V.\n"
     "Raises CompileError (with .status) on malformed KIR or a compiler failure."},
    {"kir_check", kir_check, METH_O, "kir_check(text) -> None: parse and verify KIR only."},
    {"spirv_validate", spirv_validate, METH_VARARGS,
     "spirv_validate(spirv: bytes) -> None: SPIRV-Tools validation (OpenCL 2.0 environment)."},
    {"spirv_disassemble", spirv_disassemble, METH_VARARGS,
     "spirv_disassemble(spirv: bytes) -> str: SPIRV-Tools disassembly."},
    {NULL, NULL, 0, NULL},
};

int kapi_ext_add_compile(PyObject *module) {
  return PyModule_AddFunctions(module, compile_methods);
}
