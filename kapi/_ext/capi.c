/* kapi extension: the C API for other extensions (kapi/include/kapi/capi.h, the contract). One
 * table of functions, in a PyCapsule the module holds as _C_API; the header's kapi_import_capi
 * fetches it. Array facts come through kapi.Array's own properties, so a pending (lazy) array is
 * computed as it would be for Python code; devices and queues through the runtime; launches go
 * through call.c's kx_call, the path of kapi.call_kernel itself.
 */
#include "kx.h"

#define KAPI_CAPI_TABLE_ONLY
#include "kapi/capi.h"

#include <string.h>

/* kapi's Python classes and functions the API needs, imported on first use and kept. */
typedef struct {
  const char *module, *name;
  PyObject *value;
} kc_lazy;

static kc_lazy g_array = {"kapi._memory.array", "Array", NULL};
static kc_lazy g_device = {"kapi._memory.device", "Device", NULL};
static kc_lazy g_queue = {"kapi._memory.device", "Queue", NULL};
static kc_lazy g_ndrange = {"kapi._kernel.ranges", "NdRange", NULL};
static kc_lazy g_empty = {"kapi", "empty", NULL}; /* the root's: arrays with their operators */
static kc_lazy g_launch = {"kapi._kernel.launch", "call_kernel", NULL}; /* configures kx_call */

static PyObject *lazy_get(kc_lazy *l) {
  if (!l->value) {
    PyObject *m = PyImport_ImportModule(l->module);
    l->value = m ? PyObject_GetAttrString(m, l->name) : NULL;
    Py_XDECREF(m);
  }
  return l->value;
}

/* 1 when obj is an instance of l's class, 0 when not, -1 on error. */
static int is_a(PyObject *obj, kc_lazy *l) {
  PyObject *t = lazy_get(l);
  return t ? PyObject_IsInstance(obj, t) : -1;
}

/* 0 when obj is an instance of l's class; -1 with TypeError ("a kapi.<what>") otherwise. */
static int require(PyObject *obj, kc_lazy *l, const char *what, const char *func) {
  if (!obj) {
    PyErr_Format(PyExc_TypeError, "%s: expected %s, got NULL", func, what);
    return -1;
  }
  int r = is_a(obj, l);
  if (r != 0) return r > 0 ? 0 : -1;
  PyObject *tn = PyType_GetName(Py_TYPE(obj));
  const char *name = tn ? PyUnicode_AsUTF8AndSize(tn, NULL) : NULL;
  PyErr_Clear();
  PyErr_Format(PyExc_TypeError, "%s: expected %s, got %s", func, what, name ? name : "?");
  Py_XDECREF(tn);
  return -1;
}

/* The array's attribute name (a new reference), after checking it is an array. */
static PyObject *array_attr(PyObject *a, const char *name, const char *func) {
  if (require(a, &g_array, "a kapi array (kapi.Array)", func) < 0) return NULL;
  return PyObject_GetAttrString(a, name);
}

static int c_array_check(PyObject *obj) {
  return obj ? is_a(obj, &g_array) : 0;
}

static void *c_array_data(PyObject *a) {
  PyObject *p = array_attr(a, "data_ptr", "kapi_array_data");
  void *ptr = p ? PyLong_AsVoidPtr(p) : NULL;
  Py_XDECREF(p);
  if (PyErr_Occurred()) return NULL;
  if (!ptr) /* NULL means an error: say so, though only an empty foreign array has no memory */
    PyErr_SetString(PyExc_ValueError, "kapi_array_data: the array has a null data pointer (an "
                                      "empty array imported from another library)");
  return ptr;
}

static int c_array_ndim(PyObject *a) {
  PyObject *s = array_attr(a, "shape", "kapi_array_ndim");
  Py_ssize_t n = s ? PyTuple_Size(s) : -1;
  Py_XDECREF(s);
  return (int)n;
}

/* Writes the tuple attribute name of a into out (capacity n), each divided by div. */
static int read_tuple(PyObject *a, const char *name, int64_t *out, int n, int64_t div,
                      const char *func) {
  PyObject *t = array_attr(a, name, func);
  if (!t) return -1;
  Py_ssize_t nd = PyTuple_Size(t);
  if (nd < 0 || nd > n || (nd > 0 && !out)) {
    if (nd >= 0 && !out)
      PyErr_Format(PyExc_ValueError, "%s: out is NULL", func);
    else if (nd >= 0)
      PyErr_Format(PyExc_ValueError, "%s: the array has %zd dimensions, more than the %d out has",
                   func, nd, n);
    Py_DECREF(t);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nd; i++) {
    long long v = PyLong_AsLongLong(PyTuple_GetItem(t, i));
    if (v == -1 && PyErr_Occurred()) {
      Py_DECREF(t);
      return -1;
    }
    if (v % div) {
      PyErr_Format(PyExc_ValueError,
                   "%s: stride %zd of the array (%lld bytes) is not a multiple of its itemsize "
                   "(%lld bytes): read the strides in bytes with kapi_array_strides",
                   func, i, v, (long long)div);
      Py_DECREF(t);
      return -1;
    }
    out[i] = (int64_t)(v / div);
  }
  Py_DECREF(t);
  return (int)nd;
}

static int c_array_shape(PyObject *a, int64_t *out, int n) {
  return read_tuple(a, "shape", out, n, 1, "kapi_array_shape");
}

static int c_array_strides(PyObject *a, int64_t *out, int n) {
  return read_tuple(a, "strides", out, n, 1, "kapi_array_strides");
}

/* dtype.<name> of the array as a long; -1 with an exception. */
static long dtype_field(PyObject *a, const char *name, const char *func) {
  PyObject *dt = array_attr(a, "dtype", func);
  PyObject *v = dt ? PyObject_GetAttrString(dt, name) : NULL;
  long r = -1;
  if (v && PyUnicode_Check(v)) {
    r = PyUnicode_GetLength(v) == 1 ? (long)PyUnicode_ReadChar(v, 0) : -1;
    if (r < 0 && !PyErr_Occurred())
      PyErr_Format(PyExc_ValueError, "%s: the dtype's %s is not one character", func, name);
  } else if (v) {
    r = PyLong_AsLong(v);
  }
  Py_XDECREF(v);
  Py_XDECREF(dt);
  return r;
}

static Py_ssize_t c_array_itemsize(PyObject *a) {
  return (Py_ssize_t)dtype_field(a, "itemsize", "kapi_array_itemsize");
}

static int c_array_element_strides(PyObject *a, int64_t *out, int n) {
  Py_ssize_t item = c_array_itemsize(a);
  if (item <= 0) return -1;
  return read_tuple(a, "strides", out, n, item, "kapi_array_element_strides");
}

static int c_array_typenum(PyObject *a) {
  return (int)dtype_field(a, "num", "kapi_array_typenum");
}

static int c_array_dtype_char(PyObject *a) {
  return (int)dtype_field(a, "char", "kapi_array_dtype_char");
}

static int c_array_host_accessible(PyObject *a) {
  PyObject *v = array_attr(a, "_host_ok", "kapi_array_host_accessible");
  int r = v ? PyObject_IsTrue(v) : -1;
  Py_XDECREF(v);
  return r;
}

static PyObject *c_array_device(PyObject *a) {
  return array_attr(a, "device", "kapi_array_device");
}

static PyObject *c_array_queue(PyObject *a) {
  return array_attr(a, "sycl_queue", "kapi_array_queue");
}

static PyObject *c_empty(int ndim, const int64_t *shape, const char *dtype, PyObject *device) {
  if (ndim < 0 || (ndim > 0 && !shape)) {
    PyErr_Format(PyExc_ValueError, "kapi_empty: bad shape (ndim %d%s)", ndim,
                 shape ? "" : ", shape NULL");
    return NULL;
  }
  PyObject *f = lazy_get(&g_empty);
  PyObject *t = f ? PyTuple_New(ndim) : NULL;
  for (int i = 0; t && i < ndim; i++) {
    PyObject *v = PyLong_FromLongLong((long long)shape[i]);
    if (!v)
      Py_CLEAR(t);
    else
      PyTuple_SetItem(t, i, v);
  }
  PyObject *args = t ? PyTuple_Pack(1, t) : NULL;
  PyObject *kw = args ? PyDict_New() : NULL;
  PyObject *dt = kw && dtype ? PyUnicode_FromString(dtype) : NULL;
  PyObject *r = NULL;
  if (kw && (!dtype || dt) && (!dt || PyDict_SetItemString(kw, "dtype", dt) == 0) &&
      (!device || PyDict_SetItemString(kw, "device", device) == 0))
    r = PyObject_Call(f, args, kw);
  Py_XDECREF(dt);
  Py_XDECREF(kw);
  Py_XDECREF(args);
  Py_XDECREF(t);
  return r;
}

/* The runtime device of a kapi.Device. */
static kr_device_t *device_of(PyObject *device, const char *func) {
  if (require(device, &g_device, "a kapi.Device", func) < 0) return NULL;
  PyObject *i = PyObject_GetAttrString(device, "index");
  long index = i ? PyLong_AsLong(i) : -1;
  Py_XDECREF(i);
  return PyErr_Occurred() ? NULL : kx_device(index);
}

/* which: 0 driver, 1 device, 2 context. */
static void *ze_handle(PyObject *device, int which, const char *func) {
  kr_device_t *d = device_of(device, func);
  if (!d) return NULL;
  void *h[3] = {NULL, NULL, NULL};
  kr_error_t err;
  if (kr_device_ze_handles(d, &h[0], &h[1], &h[2], &err) != KR_OK) return kx_raise(&err), NULL;
  return h[which];
}

static kapi_ze_driver_handle_t c_device_ze_driver(PyObject *device) {
  return ze_handle(device, 0, "kapi_device_ze_driver");
}
static kapi_ze_device_handle_t c_device_ze_device(PyObject *device) {
  return ze_handle(device, 1, "kapi_device_ze_device");
}
static kapi_ze_context_handle_t c_device_ze_context(PyObject *device) {
  return ze_handle(device, 2, "kapi_device_ze_context");
}

static kapi_ze_command_list_handle_t c_queue_ze_command_list(PyObject *queue) {
  if (require(queue, &g_queue, "a kapi.Queue", "kapi_queue_ze_command_list") < 0) return NULL;
  PyObject *native = PyObject_GetAttrString(queue, "_native");
  kr_queue_t *q = native ? kx_queue_handle(native) : NULL;
  Py_XDECREF(native); /* the kapi.Queue holds it */
  return q ? kr_queue_ze_command_list(q) : NULL;
}

static int c_queue_wait(PyObject *queue) {
  if (require(queue, &g_queue, "a kapi.Queue", "kapi_queue_wait") < 0) return -1;
  PyObject *r = PyObject_CallMethod(queue, "wait", NULL);
  Py_XDECREF(r);
  return r ? 0 : -1;
}

/* The index space of a launch: a tuple (a Range) or kapi.NdRange(global, local). */
static PyObject *make_space(int ndim, const size_t *global, const size_t *local) {
  PyObject *g = PyTuple_New(ndim), *l = local ? PyTuple_New(ndim) : NULL;
  for (int i = 0; g && i < ndim; i++) {
    PyTuple_SetItem(g, i, PyLong_FromSize_t(global[i]));
    if (l) PyTuple_SetItem(l, i, PyLong_FromSize_t(local[i]));
  }
  if (!g || (local && !l) || PyErr_Occurred()) {
    Py_XDECREF(g);
    Py_XDECREF(l);
    return NULL;
  }
  if (!local) return g;
  PyObject *nd = lazy_get(&g_ndrange);
  PyObject *space = nd ? PyObject_CallFunctionObjArgs(nd, g, l, NULL) : NULL;
  Py_DECREF(g);
  Py_DECREF(l);
  return space;
}

/* The index spaces of recent launches, reused: making a kapi.NdRange costs several times a
 * launch, and the launcher reuses what it parsed of the very same extents tuples (launch.c's
 * parse_space), so a loop launching over one space from C costs what kapi.call_kernel does. */
#define KC_SPACES 8
typedef struct {
  int ndim, nd;
  size_t global[3], local[3];
  PyObject *space;
} kc_space;
static kc_space g_spaces[KC_SPACES];
static int g_next_space;

static PyObject *index_space(int ndim, const size_t *global, const size_t *local,
                             const char *func) {
  if (ndim < 1 || ndim > 3 || !global) {
    PyErr_Format(PyExc_ValueError, "%s: the index space has 1 to 3 dimensions (ndim %d%s)", func,
                 ndim, global ? "" : ", global NULL");
    return NULL;
  }
  size_t bytes = (size_t)ndim * sizeof(size_t);
  for (int i = 0; i < KC_SPACES; i++) {
    kc_space *c = &g_spaces[i];
    if (c->space && c->ndim == ndim && c->nd == (local != NULL) &&
        !memcmp(c->global, global, bytes) && (!local || !memcmp(c->local, local, bytes))) {
      Py_INCREF(c->space);
      return c->space;
    }
  }
  PyObject *space = make_space(ndim, global, local);
  if (!space) return NULL;
  kc_space *c = &g_spaces[g_next_space];
  g_next_space = (g_next_space + 1) % KC_SPACES;
  Py_XDECREF(c->space);
  c->ndim = ndim, c->nd = local != NULL;
  memcpy(c->global, global, bytes);
  if (local) memcpy(c->local, local, bytes);
  Py_INCREF(space);
  c->space = space;
  return space;
}

static PyObject *launch(PyObject *kernel, int ndim, const size_t *global, const size_t *local,
                        PyObject *const *args, Py_ssize_t nargs, PyObject *deps, const char *func) {
  if (!kernel || nargs < 0 || (nargs > 0 && !args)) {
    PyErr_Format(PyExc_ValueError, "%s: %s", func,
                 kernel ? "bad arguments (nargs < 0, or args NULL)" : "kernel is NULL");
    return NULL;
  }
  for (Py_ssize_t i = 0; i < nargs; i++)
    if (!args[i]) {
      PyErr_Format(PyExc_ValueError, "%s: argument %zd is NULL", func, i);
      return NULL;
    }
  if (!lazy_get(&g_launch)) return NULL; /* importing kapi._kernel.launch configures kx_call */
  PyObject *space = index_space(ndim, global, local, func);
  if (!space) return NULL;
  PyObject *r = kx_call(kernel, space, deps, args, nargs);
  Py_DECREF(space);
  return r;
}

static int c_call_kernel(PyObject *kernel, int ndim, const size_t *global, const size_t *local,
                         PyObject *const *args, Py_ssize_t nargs) {
  PyObject *r = launch(kernel, ndim, global, local, args, nargs, Py_None, "kapi_call_kernel");
  Py_XDECREF(r);
  return r ? 0 : -1;
}

static PyObject *c_call_kernel_async(PyObject *kernel, int ndim, const size_t *global,
                                     const size_t *local, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *const *deps, Py_ssize_t ndeps) {
  if (ndeps < 0 || (ndeps > 0 && !deps)) {
    PyErr_SetString(PyExc_ValueError, "kapi_call_kernel_async: bad deps (ndeps < 0, or NULL)");
    return NULL;
  }
  PyObject *t = PyTuple_New(ndeps);
  for (Py_ssize_t i = 0; t && i < ndeps; i++) {
    if (!deps[i]) {
      PyErr_Format(PyExc_ValueError, "kapi_call_kernel_async: event %zd of deps is NULL", i);
      Py_CLEAR(t);
      break;
    }
    Py_INCREF(deps[i]);
    PyTuple_SetItem(t, i, deps[i]);
  }
  if (!t) return NULL;
  PyObject *ev = launch(kernel, ndim, global, local, args, nargs, t, "kapi_call_kernel_async");
  Py_DECREF(t);
  return ev;
}

static const kapi_capi_t g_table = {
    .version = KAPI_CAPI_VERSION,
    .size = sizeof(kapi_capi_t),
    .array_check = c_array_check,
    .array_data = c_array_data,
    .array_ndim = c_array_ndim,
    .array_shape = c_array_shape,
    .array_strides = c_array_strides,
    .array_element_strides = c_array_element_strides,
    .array_typenum = c_array_typenum,
    .array_dtype_char = c_array_dtype_char,
    .array_itemsize = c_array_itemsize,
    .array_host_accessible = c_array_host_accessible,
    .array_device = c_array_device,
    .array_queue = c_array_queue,
    .empty = c_empty,
    .device_ze_driver = c_device_ze_driver,
    .device_ze_device = c_device_ze_device,
    .device_ze_context = c_device_ze_context,
    .queue_ze_command_list = c_queue_ze_command_list,
    .queue_wait = c_queue_wait,
    .call_kernel = c_call_kernel,
    .call_kernel_async = c_call_kernel_async,
};

int kx_capi_register(PyObject *m) {
  PyObject *cap = PyCapsule_New((void *)&g_table, KAPI_CAPI_CAPSULE_NAME, NULL);
  if (!cap) return -1;
  int r = PyModule_AddObjectRef(m, "_C_API", cap);
  Py_DECREF(cap);
  if (r < 0) return -1;
  return PyModule_AddIntConstant(m, "C_API_VERSION", KAPI_CAPI_VERSION);
}
