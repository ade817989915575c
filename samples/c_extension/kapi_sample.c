/* kapi_sample: a CPython extension in C that uses kapi's C API (<kapi/capi.h>).
 *
 *   describe(a)                 the array's facts as read from C: a dict
 *   scale(a, factor)            multiplies a float32/float64 array in place, in C, on the host
 *                               (kapi's CPU device, or host or shared USM)
 *   scaled_copy(kernel, a, f)   a new array on a's device, filled by launching kernel (a
 *                               @kapi.kernel taking (item, src, dst, factor)) from C
 *   call(kernel, global, local, *args)
 *                               kapi.call_kernel from C: global and local are tuples (local None
 *                               for a Range)
 *   call_async(kernel, global, deps, *args)
 *                               kapi.call_kernel_async from C: returns the launch's event
 *   handles(a)                  the Level Zero handles of a's device and queue, as integers
 *   capi_version()              (the header's KAPI_CAPI_VERSION, the installed kapi's)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <kapi/capi.h>

#define MAX_DIMS 32

/* Reads up to 3 extents from a tuple of ints. Returns the count, or -1 with an exception. */
static int read_sizes(PyObject *t, size_t *out, const char *what) {
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 1 || PyTuple_GET_SIZE(t) > 3) {
    PyErr_Format(PyExc_TypeError, "%s must be a tuple of 1 to 3 ints", what);
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
    out[i] = PyLong_AsSize_t(PyTuple_GET_ITEM(t, i));
    if (PyErr_Occurred()) return -1;
  }
  return (int)PyTuple_GET_SIZE(t);
}

static PyObject *int_list(const int64_t *v, int n) {
  PyObject *l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    PyObject *x = PyLong_FromLongLong((long long)v[i]);
    if (!x) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, i, x);
  }
  return l;
}

static PyObject *describe(PyObject *self, PyObject *a) {
  (void)self;
  int64_t shape[MAX_DIMS], strides[MAX_DIMS], estrides[MAX_DIMS];
  int nd = kapi_array_ndim(a);
  if (nd < 0 || kapi_array_shape(a, shape, MAX_DIMS) < 0 ||
      kapi_array_strides(a, strides, MAX_DIMS) < 0 ||
      kapi_array_element_strides(a, estrides, MAX_DIMS) < 0)
    return NULL;
  void *data = kapi_array_data(a);
  int typenum = kapi_array_typenum(a), ch = kapi_array_dtype_char(a);
  Py_ssize_t itemsize = kapi_array_itemsize(a);
  int host = kapi_array_host_accessible(a);
  if (!data || typenum < 0 || ch < 0 || itemsize < 0 || host < 0) return NULL;
  return Py_BuildValue("{s:i,s:N,s:N,s:N,s:i,s:C,s:n,s:O,s:N}", "ndim", nd, "shape",
                       int_list(shape, nd), "strides", int_list(strides, nd), "element_strides",
                       int_list(estrides, nd), "typenum", typenum, "char", ch, "itemsize", itemsize,
                       "host_accessible", host ? Py_True : Py_False, "data",
                       PyLong_FromVoidPtr(data));
}

static PyObject *scale(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *a;
  double f;
  if (!PyArg_ParseTuple(args, "Od:scale", &a, &f)) return NULL;
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  int nd = kapi_array_shape(a, shape, MAX_DIMS);
  if (nd < 0 || kapi_array_strides(a, strides, MAX_DIMS) < 0) return NULL;
  int ch = kapi_array_dtype_char(a), host = kapi_array_host_accessible(a);
  if (ch < 0 || host < 0) return NULL;
  if (ch != 'f' && ch != 'd') {
    PyErr_Format(PyExc_TypeError, "scale takes float32 or float64 arrays, not dtype char '%c'", ch);
    return NULL;
  }
  if (!host) {
    PyErr_SetString(PyExc_ValueError,
                    "scale runs on the host: the array must be on kapi's CPU device or in host "
                    "or shared memory");
    return NULL;
  }
  /* Launches kapi may still be running on the array's queue come first. */
  PyObject *q = kapi_array_queue(a);
  int waited = q ? kapi_queue_wait(q) : -1;
  Py_XDECREF(q);
  char *base = waited < 0 ? NULL : (char *)kapi_array_data(a);
  if (!base) return NULL;
  int64_t n = 1, idx[MAX_DIMS] = {0};
  for (int d = 0; d < nd; d++)
    n *= shape[d];
  for (int64_t k = 0; k < n; k++) {
    char *p = base;
    for (int d = 0; d < nd; d++)
      p += idx[d] * strides[d];
    if (ch == 'f')
      *(float *)p *= (float)f;
    else
      *(double *)p *= f;
    for (int d = nd - 1; d >= 0 && ++idx[d] == shape[d]; d--) /* the next index, C order */
      idx[d] = 0;
  }
  Py_RETURN_NONE;
}

static PyObject *scaled_copy(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *kernel, *a, *factor;
  if (!PyArg_ParseTuple(args, "OOO:scaled_copy", &kernel, &a, &factor)) return NULL;
  int64_t shape[1];
  if (kapi_array_shape(a, shape, 1) < 0) return NULL; /* 1-D arrays only */
  int ch = kapi_array_dtype_char(a);
  PyObject *device = ch < 0 ? NULL : kapi_array_device(a);
  if (!device) return NULL;
  const char dtype[2] = {(char)ch, 0};
  PyObject *out = kapi_empty(1, shape, dtype, device);
  Py_DECREF(device);
  if (!out) return NULL;
  size_t global[1] = {(size_t)shape[0]};
  PyObject *kargs[3] = {a, out, factor};
  if (kapi_call_kernel(kernel, 1, global, NULL, kargs, 3) < 0) {
    Py_DECREF(out);
    return NULL;
  }
  return out;
}

static PyObject *call(PyObject *self, PyObject *args) {
  (void)self;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 3) {
    PyErr_SetString(PyExc_TypeError, "call(kernel, global, local, *args)");
    return NULL;
  }
  size_t global[3], local[3];
  int nd = read_sizes(PyTuple_GET_ITEM(args, 1), global, "global");
  PyObject *l = PyTuple_GET_ITEM(args, 2);
  if (nd < 0) return NULL;
  if (l != Py_None) {
    int nl = read_sizes(l, local, "local");
    if (nl < 0) return NULL;
    if (nl != nd) {
      PyErr_Format(PyExc_ValueError, "global has %d dimensions and local %d", nd, nl);
      return NULL;
    }
  }
  PyObject **kargs = &PyTuple_GET_ITEM(args, 3);
  if (kapi_call_kernel(PyTuple_GET_ITEM(args, 0), nd, global, l == Py_None ? NULL : local, kargs,
                       n - 3) < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *call_async(PyObject *self, PyObject *args) {
  (void)self;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 3) {
    PyErr_SetString(PyExc_TypeError, "call_async(kernel, global, deps, *args)");
    return NULL;
  }
  size_t global[3];
  int nd = read_sizes(PyTuple_GET_ITEM(args, 1), global, "global");
  PyObject *deps = PyTuple_GET_ITEM(args, 2);
  if (nd < 0) return NULL;
  if (!PyTuple_Check(deps)) {
    PyErr_SetString(PyExc_TypeError, "deps must be a tuple of events");
    return NULL;
  }
  return kapi_call_kernel_async(PyTuple_GET_ITEM(args, 0), nd, global, NULL,
                                &PyTuple_GET_ITEM(args, 3), n - 3, &PyTuple_GET_ITEM(deps, 0),
                                PyTuple_GET_SIZE(deps));
}

static PyObject *handles(PyObject *self, PyObject *a) {
  (void)self;
  PyObject *dev = kapi_array_device(a);
  PyObject *q = dev ? kapi_array_queue(a) : NULL;
  void *h[4] = {NULL, NULL, NULL, NULL};
  if (q) {
    h[0] = kapi_device_ze_driver(dev);
    h[1] = h[0] ? kapi_device_ze_device(dev) : NULL;
    h[2] = h[1] ? kapi_device_ze_context(dev) : NULL;
    h[3] = h[2] ? kapi_queue_ze_command_list(q) : NULL;
  }
  Py_XDECREF(dev);
  Py_XDECREF(q);
  if (!h[3]) return NULL;
  return Py_BuildValue("{s:N,s:N,s:N,s:N}", "driver", PyLong_FromVoidPtr(h[0]), "device",
                       PyLong_FromVoidPtr(h[1]), "context", PyLong_FromVoidPtr(h[2]),
                       "command_list", PyLong_FromVoidPtr(h[3]));
}

static PyObject *capi_version(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return Py_BuildValue("(ii)", KAPI_CAPI_VERSION, (int)kapi_capi->version);
}

static PyMethodDef methods[] = {
    {"describe", describe, METH_O, "The array's facts, read through kapi's C API."},
    {"scale", scale, METH_VARARGS, "scale(a, factor): a *= factor in place, on the host."},
    {"scaled_copy", scaled_copy, METH_VARARGS,
     "scaled_copy(kernel, a, factor): a new array filled by launching kernel from C."},
    {"call", call, METH_VARARGS, "call(kernel, global, local, *args): call_kernel from C."},
    {"call_async", call_async, METH_VARARGS,
     "call_async(kernel, global, deps, *args) -> event: call_kernel_async from C."},
    {"handles", handles, METH_O, "The Level Zero handles of the array's device and queue."},
    {"capi_version", capi_version, METH_NOARGS, "(KAPI_CAPI_VERSION built with, kapi's)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "kapi_sample", .m_doc = "A sample extension on kapi's C API.",
    .m_size = -1,          .m_methods = methods,
};

PyMODINIT_FUNC PyInit_kapi_sample(void) {
  if (kapi_import_capi() < 0) return NULL;
  return PyModule_Create(&module);
}
