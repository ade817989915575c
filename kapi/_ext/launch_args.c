/* kapi extension, launch path: one Python argument of call_kernel -> kx_arg, the form the
 * launcher packs. Fast paths for kapi arrays (their ArgDesc, parsed once and cached), Python
 * scalars and plain NumPy arrays/scalars; every other argument goes to kapi._launch._arg_desc.
 */
#include "launch.h"

#include <string.h>

/* Set once by kapi/_kernel/launch.py through rt_launch_configure (kx_args_configure). */
static PyObject *g_array_type, *g_arg_desc;
static kx_slot g_kd_slot;
static PyObject *g_kd_name, *g_kdesc_name, *g_strides_name;
static PyObject *S_BOOL, *S_I64, *S_F64;

static int read_i64_tuple(PyObject *t, int n, int64_t *out) {
  for (int i = 0; i < n; i++) {
    out[i] = PyLong_AsLongLong(PyTuple_GetItem(t, i));
    if (out[i] == -1 && PyErr_Occurred()) return -1;
  }
  return 0;
}

/* desc: ("A", key, device, queue|None, ptr, shape, strides) | ("L", key, nbytes, shape) |
 *       ("S", key, bytes). Items are borrowed from desc, which the caller keeps alive. */
static int parse_desc(PyObject *desc, kx_arg *a) {
  if (!PyTuple_Check(desc) || PyTuple_Size(desc) < 3) {
    PyErr_SetString(PyExc_SystemError, "kapi: malformed argument descriptor");
    return -1;
  }
  const char *k = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(desc, 0), NULL);
  if (!k) return -1;
  a->kind = k[0];
  a->typekey = PyTuple_GetItem(desc, 1);
  if (a->kind == 'S') {
    char *buf;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(PyTuple_GetItem(desc, 2), &buf, &n) < 0) return -1;
    if (n > 16) {
      PyErr_SetString(PyExc_SystemError, "kapi: scalar descriptor of more than 16 bytes");
      return -1;
    }
    a->value = a->value_hi = 0;
    memcpy(&a->value, buf, (size_t)(n > 8 ? 8 : n));
    if (n > 8) memcpy(&a->value_hi, buf + 8, (size_t)n - 8); /* complex128 */
    a->nbytes = (size_t)n;
    return 0;
  }
  if (a->kind == 'L') {
    PyObject *shape = PyTuple_GetItem(desc, 3);
    a->nbytes = PyLong_AsSize_t(PyTuple_GetItem(desc, 2));
    a->ndim = (int)PyTuple_Size(shape);
    return PyErr_Occurred() ? -1 : read_i64_tuple(shape, a->ndim, a->shape);
  }
  PyObject *shape = PyTuple_GetItem(desc, 5), *strides = PyTuple_GetItem(desc, 6);
  a->device = PyLong_AsLong(PyTuple_GetItem(desc, 2));
  PyObject *q = PyTuple_GetItem(desc, 3);
  a->queue = q == Py_None ? NULL : q;
  a->ptr = PyLong_AsUnsignedLongLong(PyTuple_GetItem(desc, 4));
  a->ndim = (int)PyTuple_Size(shape);
  if (PyErr_Occurred() || a->ndim < 1 || a->ndim > KX_MAX_NDIM)
    return PyErr_Occurred() ? -1 : (PyErr_SetString(PyExc_SystemError, "kapi: bad ndim"), -1);
  if (read_i64_tuple(shape, a->ndim, a->shape) || read_i64_tuple(strides, a->ndim, a->strides))
    return -1;
  return 0;
}

/* ArgDesc: a descriptor parsed once. Array._kdesc makes one per kapi array and caches it in
 * the array's _kd slot (an array's pointer, shape, strides and queue never change after it is
 * made), so a launch copies a struct instead of reading a tuple of Python objects. It owns its
 * type key (interned: equal keys are then one object and compare by address) and queue. */
typedef struct {
  PyObject_HEAD kx_arg a;
} kx_argdesc;

static PyObject *argdesc_type;

static int argdesc_init(PyObject *o, PyObject *args, PyObject *kw) {
  kx_argdesc *self = (kx_argdesc *)o;
  PyObject *desc;
  if (kw && PyDict_Size(kw)) {
    PyErr_SetString(PyExc_TypeError, "ArgDesc(descriptor: tuple)");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &desc)) return -1;
  kx_arg a;
  memset(&a, 0, sizeof a);
  if (parse_desc(desc, &a) < 0) return -1;
  if (!PyUnicode_Check(a.typekey)) {
    PyErr_SetString(PyExc_TypeError, "ArgDesc: the type key must be a str");
    return -1;
  }
  Py_INCREF(a.typekey);
  Py_XINCREF(a.queue);
  if (PyUnicode_CheckExact(a.typekey)) PyUnicode_InternInPlace(&a.typekey);
  Py_XDECREF(self->a.typekey); /* __init__ called again */
  Py_XDECREF(self->a.queue);
  self->a = a;
  return 0;
}

static void argdesc_dealloc(PyObject *o) {
  kx_argdesc *self = (kx_argdesc *)o;
  Py_XDECREF(self->a.typekey);
  Py_XDECREF(self->a.queue);
  PyTypeObject *tp = Py_TYPE(o);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

static PyObject *argdesc_typekey(PyObject *o, void *c) {
  (void)c;
  PyObject *k = ((kx_argdesc *)o)->a.typekey;
  if (!k) Py_RETURN_NONE;
  Py_INCREF(k);
  return k;
}

static PyGetSetDef argdesc_getset[] = {
    {"typekey", argdesc_typekey, NULL, "The argument's KIR type (the dispatch key part).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot argdesc_slots[] = {
    {Py_tp_init, argdesc_init},
    {Py_tp_dealloc, argdesc_dealloc},
    {Py_tp_getset, argdesc_getset},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};

static PyType_Spec argdesc_spec = {"kapi._lib._kapi.ArgDesc", sizeof(kx_argdesc), 0,
                                   Py_TPFLAGS_DEFAULT, argdesc_slots};

/* desc is an ArgDesc or a descriptor tuple; a takes its fields, borrowed from desc. */
static int take_desc(PyObject *desc, kx_arg *a) {
  if (Py_TYPE(desc) == (PyTypeObject *)argdesc_type) {
    if (!((kx_argdesc *)desc)->a.typekey) {
      PyErr_SetString(PyExc_SystemError, "kapi: ArgDesc used before __init__");
      return -1;
    }
    *a = ((kx_argdesc *)desc)->a;
    return 0;
  }
  return parse_desc(desc, a);
}

/* A kapi array's descriptor: the cached one (the _kd slot), else the property computes and
 * caches it. A new reference, or NULL with an exception. */
static PyObject *array_desc(PyObject *arg, kx_arg *a) {
  PyObject *desc = Py_TYPE(arg) == (PyTypeObject *)g_array_type && g_kd_slot.get
                       ? kx_slot_read(&g_kd_slot, arg)
                       : PyObject_GetAttr(arg, g_kd_name);
  if (desc == Py_None) {
    Py_DECREF(desc);
    desc = PyObject_GetAttr(arg, g_kdesc_name);
  }
  if (desc && take_desc(desc, a) < 0) Py_CLEAR(desc);
  return desc;
}

/* NumPy arrays and scalars of the supported dtypes, read through the buffer protocol instead of
 * the Python helper (which cost microseconds per argument). Only the plain cases: any other
 * dtype, byte order, ndim or stride takes kapi._launch._arg_desc, which also words the errors.
 * The type keys come from Python (rt_launch_numpy), so both paths give the same ones. */
#define KX_NP_FORMATS 32
typedef struct {
  char format[8];      /* the buffer format of the dtype, e.g. "f" */
  PyObject *scalar;    /* "f32" */
  PyObject *arrays[9]; /* "array(f32,N,L,global)" at [(N - 1) * 3 + (C, F, A)] */
} kx_np_format;
static kx_np_format g_np_formats[KX_NP_FORMATS];
static int g_np_nformats;
static PyObject *g_ndarray_type, *g_npgeneric_type;

static const kx_np_format *np_format(const char *f) {
  for (int i = 0; f && i < g_np_nformats; i++)
    if (strcmp(g_np_formats[i].format, f) == 0) return &g_np_formats[i];
  return NULL;
}

/* NumPy's contiguity: extents of 1 do not count, and an empty array is contiguous. */
static int np_contiguous(const Py_buffer *v, int fortran) {
  Py_ssize_t want = v->itemsize;
  for (int i = 0; i < v->ndim; i++)
    if (v->shape[i] == 0) return 1;
  for (int k = 0; k < v->ndim; k++) {
    int i = fortran ? k : v->ndim - 1 - k;
    if (v->shape[i] != 1 && v->strides[i] != want) return 0;
    want *= v->shape[i];
  }
  return 1;
}

/* NumPy exports the canonical strides of a contiguous array, which differ from the array's own
 * where an extent is 0 or 1; a kernel can read strides, so those come from the array. 0 when
 * they cannot be used (the Python helper then words the error). */
static int np_own_strides(PyObject *arr, const Py_buffer *v, kx_arg *a) {
  PyObject *st = PyObject_GetAttr(arr, g_strides_name);
  int ok = st && PyTuple_Check(st) && PyTuple_Size(st) == v->ndim;
  for (int d = 0; ok && d < v->ndim; d++) {
    Py_ssize_t x = PyLong_AsSsize_t(PyTuple_GetItem(st, d));
    ok = !(x == -1 && PyErr_Occurred()) && x % v->itemsize == 0;
    a->strides[d] = x / v->itemsize;
  }
  Py_XDECREF(st);
  PyErr_Clear();
  return ok;
}

static int np_fill(PyObject *arg, const Py_buffer *v, const kx_np_format *t, int array, kx_arg *a) {
  if (!array) {
    if (v->ndim != 0 || v->itemsize > 8 || v->len != v->itemsize) return 0;
    a->kind = 'S', a->typekey = t->scalar, a->nbytes = (size_t)v->itemsize, a->value = 0;
    memcpy(&a->value, v->buf, (size_t)v->itemsize);
    return 1;
  }
  if (v->ndim < 1 || v->ndim > 3 || !v->shape || !v->strides) return 0;
  int small = 0;
  for (int d = 0; d < v->ndim; d++) {
    if (v->strides[d] % v->itemsize) return 0;
    a->shape[d] = v->shape[d];
    a->strides[d] = v->strides[d] / v->itemsize;
    small |= v->shape[d] <= 1;
  }
  int layout = np_contiguous(v, 0) ? 0 : np_contiguous(v, 1) ? 1 : 2;
  if (small && layout != 2 && !np_own_strides(arg, v, a)) return 0;
  a->kind = 'A', a->typekey = t->arrays[(v->ndim - 1) * 3 + layout];
  a->device = -1, a->queue = NULL, a->ptr = (uint64_t)(uintptr_t)v->buf, a->ndim = v->ndim;
  return 1;
}

/* 1 when arg is a NumPy array or scalar done here, 0 when the Python helper must do it. */
static int numpy_arg(PyObject *arg, kx_arg *a) {
  if (!g_np_nformats) return 0;
  PyTypeObject *tp = Py_TYPE(arg);
  int array = tp == (PyTypeObject *)g_ndarray_type;
  if (!array && !PyType_IsSubtype(tp, (PyTypeObject *)g_npgeneric_type)) return 0;
  Py_buffer v;
  if (PyObject_GetBuffer(arg, &v, PyBUF_RECORDS_RO) < 0) {
    PyErr_Clear();
    return 0;
  }
  /* A read-only array takes the Python path: its type key says so, and the compiled kernel
   * is checked for stores to it (kapi/_kernel/dispatcher.py). */
  const kx_np_format *t = array && v.readonly ? NULL : np_format(v.format);
  int done = t && v.itemsize > 0 && np_fill(arg, &v, t, array, a);
  PyBuffer_Release(&v); /* as before: the launch holds the array, not an export of it */
  return done;
}

/* Fast paths for kapi arrays and Python scalars; everything else goes through Python. */
PyObject *kx_classify(PyObject *arg, Py_ssize_t pos, kx_arg *a) {
  if (PyObject_TypeCheck(arg, (PyTypeObject *)g_array_type)) return array_desc(arg, a);
  if (PyBool_Check(arg) || PyFloat_CheckExact(arg) || PyLong_CheckExact(arg)) {
    a->kind = 'S';
    a->value = 0;
    if (PyBool_Check(arg)) {
      a->typekey = S_BOOL, a->nbytes = 1, a->value = arg == Py_True;
    } else if (PyFloat_CheckExact(arg)) {
      double d = PyFloat_AsDouble(arg);
      a->typekey = S_F64, a->nbytes = 8;
      memcpy(&a->value, &d, 8);
    } else {
      long long v = PyLong_AsLongLong(arg);
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return kx_raise_class("UnsupportedKernelArgumentError",
                              "kernel argument %zd: the integer does not fit in int64; pass "
                              "numpy.uint64(x) for unsigned values",
                              pos);
      }
      a->typekey = S_I64, a->nbytes = 8;
      memcpy(&a->value, &v, 8);
    }
    Py_INCREF(Py_None);
    return Py_None;
  }
  if (numpy_arg(arg, a)) {
    Py_INCREF(Py_None);
    return Py_None;
  }
  PyObject *desc = PyObject_CallFunction(g_arg_desc, "On", arg, pos);
  if (!desc || take_desc(desc, a) < 0) {
    Py_XDECREF(desc);
    return NULL;
  }
  return desc;
}

/* The getter of type's slot `name` (a member descriptor of its __slots__), or none (0, and
 * launches use PyObject_GetAttr) when it is not one. */
int kx_slot_lookup(PyObject *type, PyObject *name, kx_slot *out) {
  Py_CLEAR(out->descr);
  out->get = NULL;
  PyObject *dict = PyObject_GetAttrString(type, "__dict__");
  PyObject *d = dict ? PyObject_GetItem(dict, name) : NULL;
  Py_XDECREF(dict);
  if (!d) {
    if (!PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
    PyErr_Clear();
    return 0;
  }
  descrgetfunc get = (descrgetfunc)PyType_GetSlot(Py_TYPE(d), Py_tp_descr_get);
  descrsetfunc set = (descrsetfunc)PyType_GetSlot(Py_TYPE(d), Py_tp_descr_set);
  if (!get || !set) { /* not a data descriptor: attribute lookup rules are not this simple */
    Py_DECREF(d);
    return 0;
  }
  out->descr = d;
  out->get = get;
  return 0;
}

int kx_args_configure(PyObject *array_type, PyObject *arg_desc) {
  Py_INCREF(array_type), Py_INCREF(arg_desc);
  Py_XDECREF(g_array_type), g_array_type = array_type;
  Py_XDECREF(g_arg_desc), g_arg_desc = arg_desc;
  return kx_slot_lookup(array_type, g_kd_name, &g_kd_slot);
}

static void np_formats_clear(void) {
  for (int i = 0; i < g_np_nformats; i++) {
    Py_CLEAR(g_np_formats[i].scalar);
    for (int k = 0; k < 9; k++)
      Py_CLEAR(g_np_formats[i].arrays[k]);
  }
  g_np_nformats = 0;
}

static int np_format_add(PyObject *fmt, PyObject *keys) {
  const char *f = PyUnicode_Check(fmt) ? PyUnicode_AsUTF8AndSize(fmt, NULL) : NULL;
  if (!f || strlen(f) >= sizeof g_np_formats[0].format || g_np_nformats == KX_NP_FORMATS ||
      !PyTuple_Check(keys) || PyTuple_Size(keys) != 10) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "rt_launch_numpy: {format: (scalar key, 9 array keys)}");
    return -1;
  }
  for (Py_ssize_t k = 0; k < 10; k++)
    if (!PyUnicode_Check(PyTuple_GetItem(keys, k))) {
      PyErr_SetString(PyExc_ValueError, "rt_launch_numpy: the keys must be str");
      return -1;
    }
  kx_np_format *t = &g_np_formats[g_np_nformats++];
  strcpy(t->format, f);
  t->scalar = PyTuple_GetItem(keys, 0);
  Py_INCREF(t->scalar);
  for (int k = 0; k < 9; k++) {
    t->arrays[k] = PyTuple_GetItem(keys, k + 1);
    Py_INCREF(t->arrays[k]);
    PyUnicode_InternInPlace(&t->arrays[k]);
  }
  PyUnicode_InternInPlace(&t->scalar);
  return 0;
}

/* rt_launch_numpy(ndarray, generic, {buffer format: (scalar key, 9 array keys)}): the NumPy
 * types the launch reads through their buffers. */
static PyObject *py_numpy(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *nd, *gen, *formats, *fmt, *keys;
  if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &nd, &PyType_Type, &gen, &PyDict_Type,
                        &formats))
    return NULL;
  np_formats_clear();
  Py_ssize_t pos = 0;
  while (PyDict_Next(formats, &pos, &fmt, &keys))
    if (np_format_add(fmt, keys) < 0) {
      np_formats_clear();
      return NULL;
    }
  Py_INCREF(nd), Py_INCREF(gen);
  Py_XDECREF(g_ndarray_type), g_ndarray_type = nd;
  Py_XDECREF(g_npgeneric_type), g_npgeneric_type = gen;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"rt_launch_numpy", py_numpy, METH_VARARGS, "Registers NumPy's types and dtype keys."},
    {NULL, NULL, 0, NULL},
};

int kx_args_register(PyObject *m) {
  if (!(g_kd_name = PyUnicode_InternFromString("_kd")) ||
      !(g_kdesc_name = PyUnicode_InternFromString("_kdesc")) ||
      !(g_strides_name = PyUnicode_InternFromString("strides")) ||
      !(S_BOOL = PyUnicode_InternFromString("bool")) ||
      !(S_I64 = PyUnicode_InternFromString("i64")) || !(S_F64 = PyUnicode_InternFromString("f64")))
    return -1;
  if (!(argdesc_type = kx_add_type(m, &argdesc_spec, "ArgDesc"))) return -1;
  return PyModule_AddFunctions(m, methods);
}
