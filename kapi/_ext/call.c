/* kapi extension: kapi.call_kernel and kapi.call_kernel_async themselves. Being C functions,
 * they add no Python frame to a traceback: an error in the user's kernel or arguments is
 * raised with the user's call as its only frame (KAPI_TRACEBACK=1 keeps the internal ones).
 */
#include "kx.h"

/* Set by kapi/_kernel/launch.py through rt_call_configure. */
static PyObject *g_make_launcher; /* kernel -> Launcher (and caches it on the kernel) */
static PyObject *g_user_errors;   /* tuple of exception classes that are the user's to fix */
static PyObject *g_launcher_name;
static int g_keep_traceback;

/* Drops the traceback of errors the user must fix; internal errors keep theirs. */
static void strip_user_traceback(void) {
  if (g_keep_traceback || !g_user_errors) return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value && PyObject_IsInstance(value, g_user_errors) == 1) {
    Py_CLEAR(tb);
    PyException_SetTraceback(value, Py_None);
  }
  PyErr_Restore(type, value, tb);
}

static PyObject *launcher_of(PyObject *kernel) {
  PyObject *lau = PyObject_GetAttr(kernel, g_launcher_name);
  if (lau && kx_is_launcher(lau)) return lau;
  Py_XDECREF(lau);
  PyErr_Clear();
  return PyObject_CallFunctionObjArgs(g_make_launcher, kernel, NULL);
}

static PyObject *tuple_of(PyObject *const *items, Py_ssize_t n) {
  PyObject *t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) {
    Py_INCREF(items[i]);
    PyTuple_SetItem(t, i, items[i]);
  }
  return t;
}

PyObject *kx_call(PyObject *kernel, PyObject *space, PyObject *deps, PyObject *const *argv,
                  Py_ssize_t n) {
  if (!g_make_launcher) {
    PyErr_SetString(PyExc_RuntimeError, "kapi: rt_call_configure was not called");
    return NULL;
  }
  PyObject *lau = launcher_of(kernel);
  PyObject *args = lau ? tuple_of(argv, n) : NULL;
  PyObject *r = args ? kx_launch(lau, space, args, deps) : NULL;
  Py_XDECREF(lau);
  Py_XDECREF(args);
  if (!r) strip_user_traceback();
  return r;
}

static PyObject *py_call_kernel(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc < 2) {
    PyErr_SetString(PyExc_TypeError, "call_kernel(kernel_fn, index_space, *kernel_args)");
    return NULL;
  }
  return kx_call(argv[0], argv[1], Py_None, argv + 2, argc - 2);
}

static PyObject *as_deps(PyObject *deps) {
  if (deps == Py_None) return PyTuple_New(0);
  if (PyTuple_Check(deps)) return Py_INCREF(deps), deps;
  if (PyList_Check(deps)) return PyList_AsTuple(deps);
  PyErr_SetString(PyExc_TypeError,
                  "call_kernel_async: dependent_events must be a tuple (or list) of events");
  return NULL;
}

static PyObject *py_call_kernel_async(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc < 3) {
    PyErr_SetString(PyExc_TypeError,
                    "call_kernel_async(kernel_fn, index_space, dependent_events, *kernel_args)");
    return NULL;
  }
  PyObject *deps = as_deps(argv[2]);
  PyObject *ev = deps ? kx_call(argv[0], argv[1], deps, argv + 3, argc - 3) : NULL;
  Py_XDECREF(deps);
  if (!ev) return NULL;
  PyObject *pair = PyTuple_Pack(2, ev, ev); /* (host_event, kernel_event), as numba-dpex */
  Py_DECREF(ev);
  return pair;
}

/* rt_call_configure(make_launcher, user_errors: tuple, keep_traceback: bool) */
static PyObject *py_configure(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *make, *errors;
  int keep;
  if (!PyArg_ParseTuple(args, "OO!p", &make, &PyTuple_Type, &errors, &keep)) return NULL;
  Py_INCREF(make);
  Py_INCREF(errors);
  Py_XDECREF(g_make_launcher), g_make_launcher = make;
  Py_XDECREF(g_user_errors), g_user_errors = errors;
  g_keep_traceback = keep;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"call_kernel", (PyCFunction)(void (*)(void))py_call_kernel, METH_FASTCALL,
     "call_kernel($module, kernel_fn, index_space, /, *kernel_args)\n--\n\n"
     "Compiles (once per argument types) and launches kernel_fn over index_space (a\n"
     "kapi.Range or kapi.NdRange), then waits. The launch runs on the device where the array\n"
     "arguments live."},
    {"call_kernel_async", (PyCFunction)(void (*)(void))py_call_kernel_async, METH_FASTCALL,
     "call_kernel_async($module, kernel_fn, index_space, dependent_events, /, *kernel_args)\n"
     "--\n\n"
     "Submits without waiting and returns (host_event, kernel_event). The launch starts after\n"
     "every event of dependent_events (a tuple); the arguments stay alive until it is done."},
    {"rt_call_configure", py_configure, METH_VARARGS, "Registers call_kernel's Python helpers."},
    {NULL, NULL, 0, NULL},
};

int kx_call_register(PyObject *m) {
  g_launcher_name = PyUnicode_InternFromString("_launcher");
  if (!g_launcher_name) return -1;
  return PyModule_AddFunctions(m, methods);
}
