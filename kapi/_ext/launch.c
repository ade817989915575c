/* kapi extension: the launch path of call_kernel. One Launcher per kernel object checks the
 * index space and arguments, finds the specialisation in its dispatch cache (keyed by index
 * kind, range rank and argument KIR types), packs the kernel ABI of docs/kir.md and launches
 * on the queue the array arguments live on. Python only runs on a cache miss (to compile) and
 * for argument kinds without a fast path here (LocalAccessor, interop objects, unusual NumPy
 * arguments). Per-call work is kept to copies of what was parsed once: each kapi array's
 * ArgDesc, the last index space's extents, the last dispatch key.
 */
#include "kx.h"

#include <stdlib.h>
#include <string.h>

#define Py_XSETREF_(dst, src)                                                                      \
  do {                                                                                             \
    PyObject *old_ = (dst);                                                                        \
    (dst) = (src);                                                                                 \
    Py_XDECREF(old_);                                                                              \
  } while (0)

#define KX_MAX_DEVICES 64
#define KX_MAX_ARGS 64   /* Python-level kernel arguments */
#define KX_MAX_KARGS 448 /* Level Zero arguments: 1 + 2*3 per array at most */

/* Set once by kapi/_launch.py through rt_launch_configure. */
static PyObject *g_array_type, *g_ndrange_type, *g_arg_desc, *g_host_queue;
static PyObject *g_kd_name, *g_kdesc_name, *g_global_name, *g_local_name, *g_specialize_name;

/* A slot of an exact kapi type read through its member descriptor's getter: the same result as
 * PyObject_GetAttr, without the type's attribute lookup on every launch. */
typedef struct {
  PyObject *descr;
  descrgetfunc get;
} kx_slot;
static kx_slot g_kd_slot, g_global_slot, g_local_slot;

typedef struct {
  PyObject *compiled; /* kapi._kernel.CompiledKernel */
  PyObject *spirv;    /* bytes */
  PyObject *entry;    /* str */
  kr_kernel_t *kernels[KX_MAX_DEVICES];
} kx_entry;

typedef struct {
  int nd; /* NdRange launch */
  int ndim;
  size_t global[3], local[3];
} kx_space;

typedef struct {
  PyObject_HEAD PyObject *dispatcher;
  PyObject *names; /* parameter names (the item's included), for messages */
  int name_offset; /* 1 when this launch's kernel takes an item first */
  PyObject *cache; /* key tuple -> capsule(kx_entry) */
  Py_ssize_t nparams;
  int warned_no_item;
  PyObject *last_key;  /* the key of the previous launch, and its entry: the common case of */
  kx_entry *last;      /* a loop launching with the same argument types skips the dict */
  PyObject *last_kind; /* last_key unpacked (borrowed from it): */
  int last_ndim;
  Py_ssize_t last_n;
  PyObject *last_types[KX_MAX_ARGS];
  PyObject *space_g, *space_l; /* the extents tuples the previous launch read (held: */
  kx_space space;              /* tuples are immutable), and what they gave */
} kx_launcher;

/* One argument after classification. */
typedef struct {
  char kind; /* 'A' global array, 'L' local accessor, 'S' scalar */
  PyObject *typekey;
  long device;     /* 'A': runtime device index, -1 for plain host memory */
  PyObject *queue; /* 'A': the array's queue (borrowed from desc) or NULL */
  uint64_t ptr;
  int ndim;
  int64_t shape[3], strides[3];
  size_t nbytes;  /* 'L': bytes of local memory; 'S': value size */
  uint64_t value; /* 'S': the value's bytes */
} kx_arg;

static void entry_free(PyObject *cap) {
  kx_entry *e = PyCapsule_GetPointer(cap, "kapi.entry");
  if (!e) return;
  Py_XDECREF(e->compiled);
  Py_XDECREF(e->spirv);
  Py_XDECREF(e->entry);
  PyMem_Free(e);
}

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
    if (n > 8) {
      PyErr_SetString(PyExc_SystemError, "kapi: scalar descriptor of more than 8 bytes");
      return -1;
    }
    a->value = 0;
    memcpy(&a->value, buf, (size_t)n);
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
  if (PyErr_Occurred() || a->ndim < 1 || a->ndim > 3)
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

static PyObject *slot_read(const kx_slot *s, PyObject *obj) {
  return s->get(s->descr, obj, (PyObject *)Py_TYPE(obj));
}

/* A kapi array's descriptor: the cached one (the _kd slot), else the property computes and
 * caches it. A new reference, or NULL with an exception. */
static PyObject *array_desc(PyObject *arg, kx_arg *a) {
  PyObject *desc = Py_TYPE(arg) == (PyTypeObject *)g_array_type && g_kd_slot.get
                       ? slot_read(&g_kd_slot, arg)
                       : PyObject_GetAttr(arg, g_kd_name);
  if (desc == Py_None) {
    Py_DECREF(desc);
    desc = PyObject_GetAttr(arg, g_kdesc_name);
  }
  if (desc && take_desc(desc, a) < 0) Py_CLEAR(desc);
  return desc;
}

static PyObject *S_BOOL, *S_I64, *S_F64;

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
static PyObject *g_strides_name;

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
  const kx_np_format *t = np_format(v.format);
  int done = t && v.itemsize > 0 && np_fill(arg, &v, t, array, a);
  PyBuffer_Release(&v); /* as before: the launch holds the array, not an export of it */
  return done;
}

/* Fast paths for kapi arrays and Python scalars; everything else goes through Python. */
static PyObject *classify(PyObject *arg, Py_ssize_t pos, kx_arg *a) {
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

static const char *param_name(kx_launcher *self, Py_ssize_t i) {
  PyObject *n = PyTuple_GetItem(self->names, i + self->name_offset);
  const char *s = n ? PyUnicode_AsUTF8AndSize(n, NULL) : NULL;
  if (!s) PyErr_Clear();
  return s ? s : "?";
}

static const char *device_name(long d) {
  if (d < 0) return "host memory (a NumPy array)";
  return kr_device_info(kr_device_get((uint32_t)d))->name;
}

/* The queue of a launch without device arrays, as kapi._launch._host_queue picks it. The pick
 * depends only on whether there are host arrays and on KAPI_DEFAULT_DEVICE (the device list is
 * fixed once loaded), so it is remembered with the variable's value it was made under: the
 * Python call cost more than the launch. Writes to os.environ go through putenv, so getenv
 * sees them. */
typedef struct {
  PyObject *queue; /* NULL: nothing remembered yet */
  long device;
  char *env; /* KAPI_DEFAULT_DEVICE at the pick, NULL when unset */
} kx_host_pick;
static kx_host_pick g_host_picks[2];

static void host_pick_clear(kx_host_pick *p) {
  Py_CLEAR(p->queue);
  PyMem_Free(p->env);
  p->env = NULL;
}

static int same_env(const char *x, const char *y) {
  return x == y || (x && y && strcmp(x, y) == 0);
}

static PyObject *host_queue(int host_arrays, long *device) {
  kx_host_pick *p = &g_host_picks[host_arrays != 0];
  const char *env = getenv("KAPI_DEFAULT_DEVICE");
  if (p->queue && same_env(p->env, env)) {
    *device = p->device;
    Py_INCREF(p->queue);
    return p->queue;
  }
  char *copy = env ? PyMem_Malloc(strlen(env) + 1) : NULL;
  if (env && !copy) return PyErr_NoMemory();
  if (copy) strcpy(copy, env);
  PyObject *r = PyObject_CallFunction(g_host_queue, "i", host_arrays);
  PyObject *q = r && PyTuple_Check(r) && PyTuple_Size(r) == 2 ? PyTuple_GetItem(r, 0) : NULL;
  long d = q ? PyLong_AsLong(PyTuple_GetItem(r, 1)) : -1;
  if (!q || PyErr_Occurred()) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "kapi: bad host queue pick");
    Py_XDECREF(r);
    PyMem_Free(copy);
    return NULL;
  }
  host_pick_clear(p);
  Py_INCREF(q);
  p->queue = q, p->device = d, p->env = copy;
  Py_DECREF(r);
  *device = d;
  Py_INCREF(q);
  return q;
}

/* The queue and device of the launch: compute follows data. */
static PyObject *pick_queue(kx_launcher *self, kx_arg *a, Py_ssize_t n, long *device) {
  Py_ssize_t first = -1;
  for (Py_ssize_t i = 0; i < n; i++) {
    if (a[i].kind != 'A' || a[i].device < 0) continue;
    if (first < 0) {
      first = i;
      continue;
    }
    if (a[i].device != a[first].device)
      return kx_raise_class(
          "ExecutionQueueInferenceError",
          "arguments '%s' and '%s' live on different devices ('%s' and '%s'); a launch runs "
          "where its arrays are: move one with .to_device(...) or kapi.asarray(x, device=...)",
          param_name(self, first), param_name(self, i), device_name(a[first].device),
          device_name(a[i].device));
  }
  int host_arrays = 0;
  for (Py_ssize_t i = 0; i < n; i++)
    host_arrays |= a[i].kind == 'A' && a[i].device < 0;
  if (first >= 0) {
    *device = a[first].device;
    if (host_arrays && kr_device_info(kr_device_get((uint32_t)*device))->type != KR_DEVICE_CPU)
      return kx_raise_class("UnsupportedKernelArgumentError",
                            "NumPy arrays can only be passed to kernels running on a CPU "
                            "device, and this launch runs on '%s'; copy them with "
                            "kapi.asarray(x, device=...) first",
                            device_name(*device));
    Py_INCREF(a[first].queue);
    return a[first].queue;
  }
  /* No device array: host arrays need a CPU device; otherwise the default device. */
  return host_queue(host_arrays, device);
}

static int read_extents(PyObject *t, size_t *out, const char *what) {
  Py_ssize_t n = PyTuple_Check(t) ? PyTuple_Size(t) : -1;
  if (n < 1 || n > 3) {
    kx_raise_class("InvalidRangeError", "the %s must have 1 to 3 dimensions", what);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *v = PyTuple_GetItem(t, i);
    long long x = PyLong_Check(v) && !PyBool_Check(v) ? PyLong_AsLongLong(v) : -1;
    if (x <= 0) {
      PyErr_Clear();
      kx_raise_class("InvalidRangeError",
                     "the %s extent %zd must be a positive integer; use kapi.Range(...)", what, i);
      return -1;
    }
    out[i] = (size_t)x;
  }
  return (int)n;
}

/* The extents tuples of an index space: g for a Range (a tuple; an int becomes a 1-tuple), g
 * and l for an NdRange. New references; -1 with an exception. */
static int space_tuples(PyObject *space, PyObject **g, PyObject **l) {
  *g = *l = NULL;
  if (Py_TYPE(space) == (PyTypeObject *)g_ndrange_type && g_global_slot.get && g_local_slot.get) {
    *g = slot_read(&g_global_slot, space);
    *l = *g ? slot_read(&g_local_slot, space) : NULL;
    return *l ? 0 : -1;
  }
  if (PyObject_TypeCheck(space, (PyTypeObject *)g_ndrange_type)) {
    *g = PyObject_GetAttr(space, g_global_name);
    *l = *g ? PyObject_GetAttr(space, g_local_name) : NULL;
    return *l ? 0 : -1;
  }
  if (PyLong_Check(space) && !PyBool_Check(space)) {
    *g = PyTuple_Pack(1, space);
    return *g ? 0 : -1;
  }
  if (!PyTuple_Check(space)) {
    PyObject *tn = PyType_GetName(Py_TYPE(space));
    const char *name = tn ? PyUnicode_AsUTF8AndSize(tn, NULL) : NULL;
    PyErr_Clear();
    kx_raise_class("InvalidRangeError",
                   "the index space must be a kapi.Range or kapi.NdRange, not %s",
                   name ? name : "this object");
    Py_XDECREF(tn);
    return -1;
  }
  Py_INCREF(space);
  *g = space;
  return 0;
}

static int read_space(PyObject *g, PyObject *l, kx_space *s) {
  memset(s, 0, sizeof *s);
  if (l) {
    int ng = read_extents(g, s->global, "NdRange global size");
    int nl = ng > 0 ? read_extents(l, s->local, "NdRange local size") : -1;
    if (ng < 0 || nl < 0) return -1;
    s->nd = 1, s->ndim = ng;
    return 0;
  }
  s->ndim = read_extents(g, s->global, "Range");
  return s->ndim < 0 ? -1 : 0;
}

/* The launch's index space. Launching again over the very same extents tuples (a loop reusing
 * its Range or NdRange) reuses what they gave: the launcher holds them, and tuples never change,
 * so the same object means the same extents. */
static int parse_space(kx_launcher *self, PyObject *space, kx_space *s) {
  PyObject *g, *l;
  if (space_tuples(space, &g, &l) < 0) {
    Py_XDECREF(g);
    return -1;
  }
  if (g == self->space_g && l == self->space_l) {
    *s = self->space;
    Py_DECREF(g);
    Py_XDECREF(l);
    return 0;
  }
  if (read_space(g, l, s) < 0) {
    Py_DECREF(g);
    Py_XDECREF(l);
    return -1;
  }
  Py_XSETREF_(self->space_g, g); /* read_space accepted them: both are tuples */
  Py_XSETREF_(self->space_l, l);
  self->space = *s;
  return 0;
}

static PyObject *S_ITEM, *S_NDITEM;

/* (index kind or None, ndim, typekeys...) */
static PyObject *make_key(const kx_space *s, int with_item, kx_arg *a, Py_ssize_t n) {
  PyObject *key = PyTuple_New(n + 2);
  if (!key) return NULL;
  PyObject *kind = with_item ? (s->nd ? S_NDITEM : S_ITEM) : Py_None;
  Py_INCREF(kind);
  PyTuple_SetItem(key, 0, kind);
  PyTuple_SetItem(key, 1, PyLong_FromLong(s->ndim));
  for (Py_ssize_t i = 0; i < n; i++) {
    Py_INCREF(a[i].typekey);
    PyTuple_SetItem(key, i + 2, a[i].typekey);
  }
  return key;
}

static int same_str(PyObject *x, PyObject *y) {
  return x == y || PyUnicode_Compare(x, y) == 0; /* both are str: no error possible */
}

/* Does this launch have the key of the previous one? Compares in place, allocating nothing;
 * type keys of kapi arrays are interned, so equal ones are mostly the same object. */
static int same_as_last(kx_launcher *self, const kx_space *s, int with_item, kx_arg *a,
                        Py_ssize_t n) {
  if (!self->last_key || self->last_n != n || self->last_ndim != s->ndim) return 0;
  PyObject *kind = with_item ? (s->nd ? S_NDITEM : S_ITEM) : Py_None;
  if (self->last_kind != kind) return 0;
  for (Py_ssize_t i = 0; i < n; i++)
    if (!same_str(self->last_types[i], a[i].typekey)) return 0;
  return 1;
}

/* Remembers key (taking the reference) and its entry for the next launch's same_as_last. */
static void set_last(kx_launcher *self, PyObject *key, kx_entry *e) {
  Py_ssize_t n = PyTuple_Size(key) - 2;
  Py_XSETREF_(self->last_key, key);
  self->last = e;
  self->last_kind = PyTuple_GetItem(key, 0);
  self->last_ndim = (int)PyLong_AsLong(PyTuple_GetItem(key, 1));
  self->last_n = n;
  for (Py_ssize_t i = 0; i < n; i++)
    self->last_types[i] = PyTuple_GetItem(key, i + 2);
}

/* Cache miss: dispatcher._specialize(index, argtypes) compiles (or reuses) the kernel. */
static kx_entry *specialize(kx_launcher *self, PyObject *key) {
  Py_ssize_t n = PyTuple_Size(key);
  PyObject *argtypes = PyTuple_GetSlice(key, 2, n);
  PyObject *kind = PyTuple_GetItem(key, 0);
  PyObject *index = kind == Py_None ? (Py_INCREF(Py_None), Py_None)
                                    : PyTuple_Pack(2, kind, PyTuple_GetItem(key, 1));
  PyObject *ck = argtypes && index ? PyObject_CallMethodObjArgs(self->dispatcher, g_specialize_name,
                                                                index, argtypes, NULL)
                                   : NULL;
  Py_XDECREF(argtypes);
  Py_XDECREF(index);
  if (!ck) return NULL;
  /* Another thread may have filled this key while the compile let go of the GIL: keep the
   * entry already cached, which running launches may be using. */
  PyObject *had = PyDict_GetItemWithError(self->cache, key);
  if (had || PyErr_Occurred()) {
    Py_DECREF(ck);
    return had ? PyCapsule_GetPointer(had, "kapi.entry") : NULL;
  }
  kx_entry *e = PyMem_Calloc(1, sizeof *e);
  if (!e) {
    Py_DECREF(ck);
    PyErr_NoMemory();
    return NULL;
  }
  e->compiled = ck;
  e->spirv = PyObject_GetAttrString(ck, "spirv");
  e->entry = e->spirv ? PyObject_GetAttrString(ck, "entry") : NULL;
  PyObject *cap = PyCapsule_New(e, "kapi.entry", entry_free);
  if (!cap) {
    Py_XDECREF(e->compiled), Py_XDECREF(e->spirv), Py_XDECREF(e->entry);
    PyMem_Free(e);
    return NULL;
  }
  if (!e->entry || !PyBytes_Check(e->spirv) || PyDict_SetItem(self->cache, key, cap) < 0) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_SystemError, "kapi: compiled kernel without SPIR-V");
    Py_DECREF(cap);
    return NULL;
  }
  Py_DECREF(cap); /* the cache holds it */
  return e;
}

static kr_kernel_t *device_kernel(kx_entry *e, long device) {
  if (device < 0 || device >= KX_MAX_DEVICES) {
    PyErr_SetString(PyExc_SystemError, "kapi: device index out of range");
    return NULL;
  }
  if (e->kernels[device]) return e->kernels[device];
  char *bytes;
  Py_ssize_t nbytes;
  const char *name = PyUnicode_AsUTF8AndSize(e->entry, NULL);
  if (!name || PyBytes_AsStringAndSize(e->spirv, &bytes, &nbytes) < 0) return NULL;
  kr_error_t err;
  PyThreadState *ts = PyEval_SaveThread();
  kr_kernel_t *k =
      kr_kernel_get(kr_device_get((uint32_t)device), bytes, (size_t)nbytes, name, &err);
  PyEval_RestoreThread(ts);
  if (!k) return kx_raise(&err), NULL;
  return e->kernels[device] = k;
}

/* Flattens the arguments into Level Zero arguments (docs/kir.md, "Kernel ABI"). */
static int pack(kx_arg *a, Py_ssize_t n, kr_arg_t *k, uint32_t *nk) {
  uint32_t j = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    kx_arg *x = &a[i];
    if (j + 7 > KX_MAX_KARGS) return -1;
    if (x->kind == 'S') {
      k[j++] = (kr_arg_t){x->nbytes, &x->value};
      continue;
    }
    if (x->kind == 'L')
      k[j++] = (kr_arg_t){x->nbytes, NULL};
    else
      k[j++] = (kr_arg_t){8, &x->ptr};
    for (int d = 0; d < x->ndim; d++)
      k[j++] = (kr_arg_t){8, &x->shape[d]};
    if (x->kind == 'A')
      for (int d = 0; d < x->ndim; d++)
        k[j++] = (kr_arg_t){8, &x->strides[d]};
  }
  *nk = j;
  return 0;
}

static int check_arity(kx_launcher *self, Py_ssize_t n, int *with_item) {
  if (self->nparams == n + 1) {
    *with_item = 1;
    return 0;
  }
  if (self->nparams == n) {
    *with_item = 0;
    if (!self->warned_no_item) {
      self->warned_no_item = 1;
      return PyErr_WarnEx(PyExc_DeprecationWarning,
                          "Kernels without item/nd_item will be not supported in the future", 2);
    }
    return 0;
  }
  kx_raise_class("InvalidKernelSpecializationError",
                 "the kernel takes %zd argument(s) after its item/nd_item argument, but %zd "
                 "were given to call_kernel",
                 self->nparams - 1, n);
  return -1;
}

static int gather_events(PyObject *deps, kr_event_t **evs, uint32_t *n) {
  Py_ssize_t m = PyTuple_Size(deps);
  if (m > KX_MAX_ARGS) {
    PyErr_SetString(PyExc_ValueError, "too many dependent events (at most 64)");
    return -1;
  }
  for (Py_ssize_t i = 0; i < m; i++)
    if (!(evs[i] = kx_event_handle(PyTuple_GetItem(deps, i)))) return -1;
  *n = (uint32_t)m;
  return 0;
}

static PyObject *do_launch(kx_launcher *self, const kx_space *s, kx_arg *a, Py_ssize_t n,
                           PyObject *args, PyObject *deps) {
  int with_item = 0;
  if (check_arity(self, n, &with_item) < 0) return NULL;
  kx_entry *e = same_as_last(self, s, with_item, a, n) ? self->last : NULL;
  if (!e) {
    PyObject *key = make_key(s, with_item, a, n);
    if (!key) return NULL;
    PyObject *cap = PyDict_GetItemWithError(self->cache, key);
    e = cap ? PyCapsule_GetPointer(cap, "kapi.entry")
            : (PyErr_Occurred() ? NULL : specialize(self, key));
    if (!e) {
      Py_DECREF(key);
      return NULL;
    }
    set_last(self, key, e);
  }
  long device = -1;
  PyObject *queue = pick_queue(self, a, n, &device);
  if (!queue) return NULL;
  kr_kernel_t *k = device_kernel(e, device);
  kr_queue_t *q = k ? kx_queue_handle(queue) : NULL;
  kr_arg_t kargs[KX_MAX_KARGS];
  kr_event_t *wait[KX_MAX_ARGS];
  uint32_t nk = 0, nwait = 0;
  if (!q || (deps != Py_None && gather_events(deps, wait, &nwait) < 0)) {
    Py_DECREF(queue);
    return NULL;
  }
  if (pack(a, n, kargs, &nk) < 0) {
    Py_DECREF(queue);
    return kx_raise_class("UnsupportedKernelArgumentError", "too many kernel arguments");
  }
  kr_error_t err;
  kr_event_t *ev = NULL;
  PyThreadState *ts = PyEval_SaveThread();
  kr_status_t st = kr_launch(q, k, (uint32_t)s->ndim, s->global, s->nd ? s->local : NULL, nk, kargs,
                             nwait, wait, deps != Py_None ? &ev : NULL, &err);
  PyEval_RestoreThread(ts);
  if (st != KR_OK) {
    Py_DECREF(queue);
    return kx_raise(&err);
  }
  if (deps == Py_None) {
    Py_DECREF(queue);
    Py_RETURN_NONE;
  }
  PyObject *event = kx_event_new(ev, args);
  if (event && kx_queue_track(queue, event) < 0) Py_CLEAR(event);
  Py_DECREF(queue);
  return event;
}

/* launch(index_space, args: tuple, deps: tuple | None) -> None (sync) or Event (async). */
static PyObject *launcher_type;

int kx_is_launcher(PyObject *o) {
  return PyObject_TypeCheck(o, (PyTypeObject *)launcher_type);
}

PyObject *kx_launch(PyObject *o, PyObject *space, PyObject *args, PyObject *deps) {
  kx_launcher *self = (kx_launcher *)o;
  kx_space s;
  if (parse_space(self, space, &s) < 0) return NULL;
  Py_ssize_t n = PyTuple_Size(args);
  self->name_offset = self->nparams == n + 1;
  if (n > KX_MAX_ARGS)
    return kx_raise_class("UnsupportedKernelArgumentError", "at most %d kernel arguments",
                          KX_MAX_ARGS);
  kx_arg a[KX_MAX_ARGS];
  PyObject *descs[KX_MAX_ARGS];
  Py_ssize_t got = 0;
  PyObject *result = NULL;
  for (; got < n; got++) {
    descs[got] = classify(PyTuple_GetItem(args, got), got, &a[got]);
    if (!descs[got]) goto done;
    if (a[got].kind == 'L' && !s.nd) {
      kx_raise_class("UnsupportedKernelArgumentError",
                     "argument '%s' is a LocalAccessor, which needs work-groups: launch with "
                     "kapi.NdRange(global_size, local_size) instead of kapi.Range",
                     param_name(self, got));
      goto done;
    }
  }
  result = do_launch(self, &s, a, n, args, deps);
done:
  for (Py_ssize_t i = 0; i < got; i++)
    Py_DECREF(descs[i]);
  return result;
}

static PyObject *launcher_launch(PyObject *o, PyObject *const *argv, Py_ssize_t argc) {
  if (argc != 3 || !PyTuple_Check(argv[1]) || (argv[2] != Py_None && !PyTuple_Check(argv[2]))) {
    PyErr_SetString(PyExc_TypeError, "launch(index_space, args: tuple, deps: tuple | None)");
    return NULL;
  }
  return kx_launch(o, argv[0], argv[1], argv[2]);
}

static int launcher_init(PyObject *o, PyObject *args, PyObject *kw) {
  kx_launcher *self = (kx_launcher *)o;
  PyObject *disp, *names;
  Py_ssize_t nparams;
  if (kw && PyDict_Size(kw)) {
    PyErr_SetString(PyExc_TypeError, "Launcher(dispatcher, nparams, names)");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "OnO!", &disp, &nparams, &PyTuple_Type, &names)) return -1;
  Py_INCREF(disp);
  Py_INCREF(names);
  self->dispatcher = disp;
  self->names = names;
  self->nparams = nparams;
  self->cache = PyDict_New();
  return self->cache ? 0 : -1;
}

static void launcher_dealloc(PyObject *o) {
  kx_launcher *self = (kx_launcher *)o;
  Py_XDECREF(self->dispatcher);
  Py_XDECREF(self->names);
  Py_XDECREF(self->cache);
  Py_XDECREF(self->last_key);
  Py_XDECREF(self->space_g);
  Py_XDECREF(self->space_l);
  PyTypeObject *tp = Py_TYPE(o);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

static PyObject *launcher_cache_size(PyObject *o, void *c) {
  (void)c;
  return PyLong_FromSsize_t(PyDict_Size(((kx_launcher *)o)->cache));
}

static PyMethodDef launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launcher_launch, METH_FASTCALL,
     "launch(index_space, args, deps) -> None or Event."},
    {NULL, NULL, 0, NULL},
};

static PyObject *launcher_last_key(PyObject *o, void *c) {
  (void)c;
  PyObject *k = ((kx_launcher *)o)->last_key;
  if (!k) Py_RETURN_NONE;
  Py_INCREF(k);
  return k;
}

static PyGetSetDef launcher_getset[] = {
    {"cache_size", launcher_cache_size, NULL, "Entries in the dispatch cache.", NULL},
    {"last_key", launcher_last_key, NULL,
     "The dispatch key of the previous launch: (index kind, ndim, argument types...).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot launcher_slots[] = {
    {Py_tp_init, launcher_init},       {Py_tp_dealloc, launcher_dealloc},
    {Py_tp_methods, launcher_methods}, {Py_tp_getset, launcher_getset},
    {Py_tp_new, PyType_GenericNew},    {0, NULL},
};

static PyType_Spec launcher_spec = {"kapi._lib._kapi.Launcher", sizeof(kx_launcher), 0,
                                    Py_TPFLAGS_DEFAULT, launcher_slots};

/* The getter of type's slot `name` (a member descriptor of its __slots__), or none (0, and
 * launches use PyObject_GetAttr) when it is not one. */
static int slot_lookup(PyObject *type, PyObject *name, kx_slot *out) {
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

/* rt_launch_configure(Array, NdRange, arg_desc, host_queue): the Python pieces of the path. */
static PyObject *py_configure(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *at, *nt, *desc, *hq;
  if (!PyArg_ParseTuple(args, "OOOO", &at, &nt, &desc, &hq)) return NULL;
  Py_INCREF(at), Py_INCREF(nt), Py_INCREF(desc), Py_INCREF(hq);
  Py_XDECREF(g_array_type), g_array_type = at;
  Py_XDECREF(g_ndrange_type), g_ndrange_type = nt;
  Py_XDECREF(g_arg_desc), g_arg_desc = desc;
  Py_XDECREF(g_host_queue), g_host_queue = hq;
  host_pick_clear(&g_host_picks[0]);
  host_pick_clear(&g_host_picks[1]);
  if (slot_lookup(at, g_kd_name, &g_kd_slot) < 0 ||
      slot_lookup(nt, g_global_name, &g_global_slot) < 0 ||
      slot_lookup(nt, g_local_name, &g_local_slot) < 0)
    return NULL;
  Py_RETURN_NONE;
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
    {"rt_launch_configure", py_configure, METH_VARARGS, "Registers the Python launch helpers."},
    {"rt_launch_numpy", py_numpy, METH_VARARGS, "Registers NumPy's types and dtype keys."},
    {NULL, NULL, 0, NULL},
};

int kx_launch_register(PyObject *m) {
  if (!(g_kd_name = PyUnicode_InternFromString("_kd")) ||
      !(g_kdesc_name = PyUnicode_InternFromString("_kdesc")) ||
      !(g_global_name = PyUnicode_InternFromString("_global_range")) ||
      !(g_local_name = PyUnicode_InternFromString("_local_range")) ||
      !(g_specialize_name = PyUnicode_InternFromString("_specialize")) ||
      !(g_strides_name = PyUnicode_InternFromString("strides")) ||
      !(S_BOOL = PyUnicode_InternFromString("bool")) ||
      !(S_I64 = PyUnicode_InternFromString("i64")) ||
      !(S_F64 = PyUnicode_InternFromString("f64")) ||
      !(S_ITEM = PyUnicode_InternFromString("item")) ||
      !(S_NDITEM = PyUnicode_InternFromString("nditem")))
    return -1;
  PyObject *ad = PyType_FromSpec(&argdesc_spec);
  argdesc_type = ad;
  Py_XINCREF(ad);
  if (!ad || PyModule_AddObject(m, "ArgDesc", ad) < 0) return -1;
  PyObject *t = PyType_FromSpec(&launcher_spec);
  launcher_type = t;
  Py_XINCREF(t);
  if (!t || PyModule_AddObject(m, "Launcher", t) < 0) return -1;
  return PyModule_AddFunctions(m, methods);
}

int kx_runtime_register(PyObject *m) {
  if (kx_device_register(m) || kx_queue_register(m) || kx_memory_register(m) ||
      kx_event_register(m) || kx_launch_register(m) || kx_call_register(m) || kx_dlpack_register(m))
    return -1;
  return 0;
}
