/* kapi extension: USM memory. Buffer owns one kr_malloc allocation (freed when the last
 * Python reference goes: arrays, views, DLPack capsules and pending launches all hold one)
 * and exposes it through the buffer protocol when the host can address it, which is how
 * NumPy views CPU-device memory without copies. Plus copies, fills and pointer queries.
 */
#include "fork.h"
#include "kx.h"

typedef struct {
  PyObject_HEAD void *ptr;
  size_t nbytes;
  int kind;    /* kr_mem_kind_t */
  long device; /* runtime device index */
  int host_ok; /* 1 when the host may read and write it directly */
} kx_buffer;

static int buffer_init(PyObject *o, PyObject *args, PyObject *kw) {
  kx_buffer *self = (kx_buffer *)o;
  long device;
  int kind;
  Py_ssize_t nbytes, align = 0;
  static char *kwlist[] = {"device", "kind", "nbytes", "alignment", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "lin|n", kwlist, &device, &kind, &nbytes, &align))
    return -1;
  if (nbytes < 0 || kind < KR_MEM_HOST || kind > KR_MEM_SHARED) {
    PyErr_SetString(PyExc_ValueError, "Buffer: bad size or memory kind");
    return -1;
  }
  kr_device_t *dev = kx_device(device);
  if (!dev || kx_fork_check(device) < 0) return -1;
  kr_error_t err;
  /* The runtime wants size > 0; an empty array still gets a distinct, valid pointer. */
  void *p = kr_malloc(dev, (kr_mem_kind_t)kind, nbytes ? (size_t)nbytes : 1, (size_t)align, &err);
  if (!p) {
    kx_raise(&err);
    return -1;
  }
  self->ptr = p;
  self->nbytes = (size_t)nbytes;
  self->kind = kind;
  self->device = device;
  self->host_ok = kind != KR_MEM_DEVICE || kr_device_info(dev)->type == KR_DEVICE_CPU;
  return 0;
}

static void buffer_dealloc(PyObject *o) {
  kx_buffer *self = (kx_buffer *)o;
  if (self->ptr) kr_free(self->ptr, NULL);
  PyTypeObject *tp = Py_TYPE(o);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

static int buffer_get(PyObject *o, Py_buffer *view, int flags) {
  kx_buffer *self = (kx_buffer *)o;
  if (!self->host_ok) {
    PyErr_SetString(PyExc_BufferError,
                    "this USM memory is device memory the host cannot address; copy it with "
                    ".asnumpy()");
    return -1;
  }
  return PyBuffer_FillInfo(view, o, self->ptr, (Py_ssize_t)self->nbytes, 0, flags);
}

static PyObject *get_ptr(PyObject *o, void *c) {
  (void)c;
  return PyLong_FromVoidPtr(((kx_buffer *)o)->ptr);
}
static PyObject *get_nbytes(PyObject *o, void *c) {
  (void)c;
  return PyLong_FromSize_t(((kx_buffer *)o)->nbytes);
}
static PyObject *get_kind(PyObject *o, void *c) {
  (void)c;
  return PyLong_FromLong(((kx_buffer *)o)->kind);
}
static PyObject *get_device(PyObject *o, void *c) {
  (void)c;
  return PyLong_FromLong(((kx_buffer *)o)->device);
}
static PyObject *get_host_ok(PyObject *o, void *c) {
  (void)c;
  return PyBool_FromLong(((kx_buffer *)o)->host_ok);
}

static PyGetSetDef buffer_getset[] = {
    {"ptr", get_ptr, NULL, "Address of the allocation.", NULL},
    {"nbytes", get_nbytes, NULL, "Size in bytes.", NULL},
    {"kind", get_kind, NULL, "kr_mem_kind_t: 1 host, 2 device, 3 shared.", NULL},
    {"device_index", get_device, NULL, "Runtime index of the owning device.", NULL},
    {"host_accessible", get_host_ok, NULL, "True when the host can address it.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot buffer_slots[] = {
    {Py_tp_init, buffer_init},     {Py_tp_dealloc, buffer_dealloc}, {Py_bf_getbuffer, buffer_get},
    {Py_tp_getset, buffer_getset}, {Py_tp_new, PyType_GenericNew},  {0, NULL},
};

static PyType_Spec buffer_spec = {"kapi._lib._kapi.Buffer", sizeof(kx_buffer), 0,
                                  Py_TPFLAGS_DEFAULT, buffer_slots};

static void *as_ptr(PyObject *v) {
  return PyLong_AsVoidPtr(v);
}

/* rt_memcpy(queue, dst, src, n): synchronous copy between USM and/or host addresses. */
static PyObject *py_memcpy(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *q, *dst, *src;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "OOOn", &q, &dst, &src, &n)) return NULL;
  kr_queue_t *queue = kx_queue_handle(q);
  void *d = as_ptr(dst), *s = as_ptr(src);
  if (!queue || PyErr_Occurred()) return NULL;
  if (n <= 0) Py_RETURN_NONE;
  kr_error_t err;
  PyThreadState *ts = kx_gil_release();
  kr_status_t st = kr_memcpy(queue, d, s, (size_t)n, 0, NULL, NULL, &err);
  kx_gil_restore(ts);
  if (st != KR_OK) return kx_raise(&err);
  Py_RETURN_NONE;
}

/* rt_fill(queue, dst, pattern: bytes, n): synchronous fill with a repeated pattern. */
static PyObject *py_fill(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *q, *dst;
  const char *pat;
  Py_ssize_t plen, n;
  if (!PyArg_ParseTuple(args, "OOy#n", &q, &dst, &pat, &plen, &n)) return NULL;
  kr_queue_t *queue = kx_queue_handle(q);
  void *d = as_ptr(dst);
  if (!queue || PyErr_Occurred()) return NULL;
  if (n <= 0) Py_RETURN_NONE;
  kr_error_t err;
  PyThreadState *ts = kx_gil_release();
  kr_status_t st = kr_fill(queue, d, pat, (size_t)plen, (size_t)n, 0, NULL, NULL, &err);
  kx_gil_restore(ts);
  if (st != KR_OK) return kx_raise(&err);
  Py_RETURN_NONE;
}

/* rt_pointer_info(ptr) -> (kind, device index or -1, base, size). */
static PyObject *py_pointer_info(PyObject *self, PyObject *arg) {
  (void)self;
  void *p = as_ptr(arg);
  if (PyErr_Occurred()) return NULL;
  kr_pointer_info_t info;
  kr_error_t err;
  if (kr_pointer_info(p, &info, &err) != KR_OK) return kx_raise(&err);
  long dev = info.device ? (long)kr_device_info(info.device)->index : -1;
  return Py_BuildValue("(ilNn)", (int)info.kind, dev, PyLong_FromVoidPtr(info.base),
                       (Py_ssize_t)info.size);
}

/* ArrayBase: kapi.Array's base class, which gives it the buffer protocol (a Python class only
 * gets one from 3.12's __buffer__). The array's _buffer_export() returns a NumPy view of its
 * memory when the host can address it (kapi's CPU device, host and shared USM), and that view
 * exports the buffer: no copy. Device memory raises BufferError, so consumers such as mpi4py
 * go on to DLPack or __cuda_array_interface__. */
static int array_get_buffer(PyObject *self, Py_buffer *view, int flags) {
  PyObject *host = PyObject_CallMethod(self, "_buffer_export", NULL);
  if (!host) return -1;
  int r = PyObject_GetBuffer(host, view, flags);
  Py_DECREF(host);
  return r;
}

static PyType_Slot array_base_slots[] = {{Py_bf_getbuffer, array_get_buffer}, {0, NULL}};

static PyType_Spec array_base_spec = {"kapi._lib._kapi.ArrayBase", 0, 0,
                                      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, array_base_slots};

static PyMethodDef methods[] = {
    {"rt_memcpy", py_memcpy, METH_VARARGS, "rt_memcpy(queue, dst, src, n), synchronous."},
    {"rt_fill", py_fill, METH_VARARGS, "rt_fill(queue, dst, pattern, n), synchronous."},
    {"rt_pointer_info", py_pointer_info, METH_O, "(kind, device, base, size) of an address."},
    {NULL, NULL, 0, NULL},
};

int kx_memory_register(PyObject *m) {
  PyObject *t = kx_add_type(m, &buffer_spec, "Buffer");
  Py_XDECREF(t); /* the module's reference is enough: nothing here checks for Buffers */
  if (!t) return -1;
  t = kx_add_type(m, &array_base_spec, "ArrayBase");
  Py_XDECREF(t);
  return t ? PyModule_AddFunctions(m, methods) : -1;
}
