/* kapi extension: the Launcher, call_kernel's launch path. It reads the index space, finds the
 * specialisation in its dispatch cache (index kind, rank, argument KIR types; Python runs only on
 * a miss, to compile), packs the kernel ABI of docs/kir.md and launches on the queue the arrays
 * live on. launch_args.c makes the arguments; per call, the launcher reuses what the previous
 * launch parsed (the index space's extents, the dispatch key).
 */
#include "launch.h"
#include "fork.h"

#include <stdio.h>
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
#define KX_MAX_KARGS 896 /* Level Zero arguments */
/* The most one argument takes: a complex array, 2 * (1 + 2 * KX_MAX_NDIM) */
#define KX_ARG_MAX_KARGS (2 * (1 + 2 * KX_MAX_NDIM))

/* Set once by kapi/_kernel/launch.py through rt_launch_configure (the argument half's part goes to
 * kx_args_configure). */
static PyObject *g_ndrange_type, *g_host_queue;
static PyObject *g_global_name, *g_local_name, *g_specialize_name, *g_prepare_name;
static kx_slot g_global_slot, g_local_slot;

typedef struct {
  PyObject *compiled; /* kapi._kernel.CompiledKernel */
  PyObject *spirv;    /* bytes */
  PyObject *entry;    /* str */
  kr_kernel_t *kernels[KX_MAX_DEVICES];
  int checked;                      /* the kernel asserts: it takes a status buffer (docs/kir.md) */
  int prints;                       /* the kernel prints */
  void *status[KX_MAX_DEVICES];     /* checked: the synchronous launches' buffer per device */
  char status_busy[KX_MAX_DEVICES]; /* a synchronous launch is using it */
} kx_entry;

/* u32 flag, u32 site, u64 global id[3], i64 value[2] (compiler/src/lower/lower_raise.c) */
#define KX_STATUS_BYTES 48

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
  int item_first; /* the first parameter is surely the item: its index-space methods are used */
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

static void entry_free(PyObject *cap) {
  kx_entry *e = PyCapsule_GetPointer(cap, "kapi.entry");
  if (!e) return;
  Py_XDECREF(e->compiled);
  Py_XDECREF(e->spirv);
  Py_XDECREF(e->entry);
  for (int d = 0; d < KX_MAX_DEVICES; d++) {
    kr_error_t err;
    if (e->status[d]) kr_free(e->status[d], &err);
  }
  PyMem_Free(e);
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

/* "'NAME' (FILTER)" for messages: two devices of one model differ in their filter strings
 * (kapi.Device.filter_string, which kapi.Device(...) and .to_device(...) take). */
static void device_label(long d, char *buf, size_t n) {
  if (d < 0) {
    snprintf(buf, n, "%s", device_name(d));
    return;
  }
  PyObject *m = PyImport_ImportModule("kapi._memory.device");
  PyObject *devs = m ? PyObject_CallMethod(m, "devices", NULL) : NULL;
  PyObject *dev = devs ? PySequence_GetItem(devs, d) : NULL;
  PyObject *fs = dev ? PyObject_GetAttrString(dev, "filter_string") : NULL;
  const char *filter = fs && PyUnicode_Check(fs) ? PyUnicode_AsUTF8AndSize(fs, NULL) : NULL;
  PyErr_Clear();
  if (filter)
    snprintf(buf, n, "'%s' (%s)", device_name(d), filter);
  else
    snprintf(buf, n, "'%s' (device %ld)", device_name(d), d);
  Py_XDECREF(fs);
  Py_XDECREF(dev);
  Py_XDECREF(devs);
  Py_XDECREF(m);
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
    if (a[i].device != a[first].device) {
      char d0[300], d1[300];
      device_label(a[first].device, d0, sizeof d0);
      device_label(a[i].device, d1, sizeof d1);
      return kx_raise_class(
          "ExecutionQueueInferenceError",
          "arguments '%s' and '%s' live on different devices (%s and %s); a launch runs "
          "where its arrays are: move one with .to_device(...) or kapi.asarray(x, device=...)",
          param_name(self, first), param_name(self, i), d0, d1);
    }
    if (a[i].queue && a[first].queue && a[i].queue != a[first].queue) {
      char d0[300];
      device_label(a[first].device, d0, sizeof d0);
      return kx_raise_class(
          "ExecutionQueueInferenceError",
          "arguments '%s' and '%s' are on two different queues of one device (%s): a launch "
          "runs on one queue, and work still pending on the other would not be ordered before "
          "it; allocate them on one queue, or wait for the other queue (queue.wait()) and "
          "rebind its array with .to_device(queue)",
          param_name(self, first), param_name(self, i), d0);
    }
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
    *g = kx_slot_read(&g_global_slot, space);
    *l = *g ? kx_slot_read(&g_local_slot, space) : NULL;
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

/* The most work-items of one launch: what Level Zero's 32-bit group-size queries and DPC++'s
 * default range check (ids fit in int) agree on. Past it a launch would either fail deep in a
 * driver or, on the CPU device, run for hours on what is almost surely a mistake. */
#define KX_MAX_WORK_ITEMS 0xffffffffull

static int check_total(const kx_space *s) {
  unsigned long long total = 1;
  for (int d = 0; d < s->ndim; d++) {
    if (s->global[d] > KX_MAX_WORK_ITEMS || (total *= s->global[d]) > KX_MAX_WORK_ITEMS) {
      kx_raise_class("InvalidRangeError",
                     "the index space is too large: more than %llu work-items in one launch; "
                     "split the work into several launches or give each work-item several "
                     "elements (a loop with a stride of the global size)",
                     KX_MAX_WORK_ITEMS);
      return -1;
    }
  }
  return 0;
}

static int read_space(PyObject *g, PyObject *l, kx_space *s) {
  memset(s, 0, sizeof *s);
  if (l) {
    int ng = read_extents(g, s->global, "NdRange global size");
    int nl = ng > 0 ? read_extents(l, s->local, "NdRange local size") : -1;
    if (ng < 0 || nl < 0) return -1;
    s->nd = 1, s->ndim = ng;
    return check_total(s);
  }
  s->ndim = read_extents(g, s->global, "Range");
  return s->ndim < 0 ? -1 : check_total(s);
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
  PyObject *raises = e->entry ? PyObject_GetAttrString(ck, "raises") : NULL;
  PyObject *prints = raises ? PyObject_GetAttrString(ck, "prints") : NULL;
  e->checked = raises && PyObject_IsTrue(raises) == 1;
  e->prints = prints && PyObject_IsTrue(prints) == 1;
  Py_XDECREF(raises);
  Py_XDECREF(prints);
  if (!prints) Py_CLEAR(e->entry); /* reported below */
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
  /* First use on this device: the disk cache may hold the device's native binary (and keeps
   * the one built now); CompiledKernel._prepare_device does it. Its failures cost only the
   * cache: the build below reports errors. */
  PyObject *d = PyLong_FromLong(device);
  PyObject *r = d ? PyObject_CallMethodObjArgs(e->compiled, g_prepare_name, d, NULL) : NULL;
  if (!r) PyErr_Clear();
  Py_XDECREF(r);
  Py_XDECREF(d);
  char *bytes;
  Py_ssize_t nbytes;
  const char *name = PyUnicode_AsUTF8AndSize(e->entry, NULL);
  if (!name || PyBytes_AsStringAndSize(e->spirv, &bytes, &nbytes) < 0) return NULL;
  kr_error_t err;
  PyThreadState *ts = kx_gil_release();
  kr_kernel_t *k =
      kr_kernel_get(kr_device_get((uint32_t)device), bytes, (size_t)nbytes, name, &err);
  kx_gil_restore(ts);
  if (!k) return kx_raise(&err), NULL;
  return e->kernels[device] = k;
}

/* Bytes of one part (real or imaginary) when the argument is complex, else 0: the type key
 * is "c64"/"c128" or "array(c64,..". Keys are ASCII, so the UTF-8 view is the key itself. */
static size_t complex_part(const kx_arg *x) {
  const char *t = PyUnicode_AsUTF8AndSize(x->typekey, NULL);
  if (!t) return PyErr_Clear(), 0;
  if (x->kind == 'A' && strncmp(t, "array(", 6) == 0) t += 6;
  if (t[0] != 'c') return 0;
  return t[1] == '6' ? 4 : 8;
}

/* A complex array is two arrays of its real element type: the real parts at the data pointer,
 * the imaginary parts one part further, both with strides in parts (twice the element ones). */
static void pack_complex_array(kx_arg *x, size_t part, kr_arg_t *k, uint32_t *j) {
  x->ptr_im = x->ptr + part;
  for (int d = 0; d < x->ndim; d++)
    x->part_strides[d] = 2 * x->strides[d];
  uint64_t *ptrs[2] = {&x->ptr, &x->ptr_im};
  for (int h = 0; h < 2; h++) {
    k[(*j)++] = (kr_arg_t){8, ptrs[h]};
    for (int d = 0; d < x->ndim; d++)
      k[(*j)++] = (kr_arg_t){8, &x->shape[d]};
    for (int d = 0; d < x->ndim; d++)
      k[(*j)++] = (kr_arg_t){8, &x->part_strides[d]};
  }
}

/* Flattens the arguments into Level Zero arguments (docs/kir.md, "Kernel ABI"). */
static int pack(kx_arg *a, Py_ssize_t n, kr_arg_t *k, uint32_t *nk) {
  uint32_t j = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    kx_arg *x = &a[i];
    if (j + KX_ARG_MAX_KARGS > KX_MAX_KARGS) return -1;
    size_t part = x->kind == 'L' ? 0 : complex_part(x);
    if (x->kind == 'S' && part) { /* a complex scalar: its real part, then its imaginary one */
      k[j++] = (kr_arg_t){part, &x->value};
      k[j++] = (kr_arg_t){part, part == 4 ? (char *)&x->value + 4 : (char *)&x->value_hi};
      continue;
    }
    if (x->kind == 'S') {
      k[j++] = (kr_arg_t){x->nbytes, &x->value};
      continue;
    }
    if (part) {
      pack_complex_array(x, part, k, &j);
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

/* The UTF-8 text of o, or fallback (for messages; never fails). */
static const char *text_or(PyObject *o, const char *fallback) {
  const char *s = o && PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, NULL) : NULL;
  PyErr_Clear();
  return s ? s : fallback;
}

static int arity_error(kx_launcher *self, Py_ssize_t n) {
  PyObject *name = PyObject_GetAttrString(self->dispatcher, "__name__");
  const char *s = text_or(name, "?");
  if (self->nparams == n) /* item_first: the item is among the arguments, or one is extra */
    kx_raise_class("InvalidKernelSpecializationError",
                   "kernel '%s' takes %zd argument(s) after its index-space argument '%s' (it "
                   "calls index-space methods on it), but %zd were given to call_kernel: one "
                   "too many; pass call_kernel(kernel, range, *arguments), without an item",
                   s, self->nparams - 1, text_or(PyTuple_GetItem(self->names, 0), "item"), n);
  else
    kx_raise_class("InvalidKernelSpecializationError",
                   "kernel '%s' takes %zd argument(s) after its item/nd_item argument, but %zd "
                   "were given to call_kernel; pass call_kernel(kernel, range, *arguments)",
                   s, self->nparams - 1, n);
  Py_XDECREF(name);
  return -1;
}

static int check_arity(kx_launcher *self, Py_ssize_t n, int *with_item) {
  if (self->nparams == n + 1) {
    *with_item = 1;
    return 0;
  }
  if (self->nparams == n && !self->item_first) {
    *with_item = 0;
    if (!self->warned_no_item) {
      self->warned_no_item = 1;
      return PyErr_WarnEx(PyExc_DeprecationWarning,
                          "Kernels without item/nd_item will be not supported in the future", 2);
    }
    return 0;
  }
  return arity_error(self, n);
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

int kx_status_check(PyObject *compiled, const void *status, int ndim) {
  const uint32_t *w = status;
  if (!w[0]) return 0;
  const uint64_t *id = (const uint64_t *)status + 1;
  const int64_t *val = (const int64_t *)status + 4;
  PyObject *r = PyObject_CallMethod(
      compiled, "_raise_failure", "IiKKKLL", (unsigned)w[1], ndim, (unsigned long long)id[0],
      (unsigned long long)id[1], (unsigned long long)id[2], (long long)val[0], (long long)val[1]);
  if (r) { /* _raise_failure always raises */
    Py_DECREF(r);
    PyErr_SetString(PyExc_SystemError, "kapi: a kernel's assert failed without an exception");
  }
  return -1;
}

/* The zeroed status buffer of a launch of a kernel with assert: per device and reused by
 * synchronous launches, or fresh (the launch, or its Event, frees it). Host-writable shared
 * memory: zeroing and reading it need no copies. */
static void *launch_status(kx_entry *e, long device, int fresh) {
  void *buf = fresh ? NULL : e->status[device];
  if (!buf) {
    kr_error_t err;
    buf = kr_malloc(kr_device_get((uint32_t)device), KR_MEM_SHARED, KX_STATUS_BYTES, 8, &err);
    if (!buf) return kx_raise(&err), NULL;
    if (!fresh) e->status[device] = buf;
  }
  memset(buf, 0, KX_STATUS_BYTES);
  return buf;
}

/* Python's buffered prints go out before the kernel's lines (which the host device writes
 * straight to file descriptor 1). */
static int flush_python_stdout(void) {
  PyObject *out = PySys_GetObject("stdout"); /* borrowed */
  if (!out || out == Py_None) return 0;
  PyObject *r = PyObject_CallMethod(out, "flush", NULL);
  Py_XDECREF(r);
  return r ? 0 : -1;
}

/* Ctrl-C during a launch. The CPU driver runs a launch's work-groups on the launching thread
 * (GIL released) and its pool; every 50 ms of a long launch it calls this, which takes the GIL
 * and runs Python's signal handlers. If one raised (KeyboardInterrupt), the exception stays
 * set, the driver stops handing out work-groups and waits for the running ones, and the
 * launch fails; do_launch then raises the handler's exception. Handlers run inside the
 * launch: one that launched a kernel itself would wait for this launch forever. */
static int check_signals(void *ctx) {
  (void)ctx;
  PyGILState_STATE g = PyGILState_Ensure();
  int raised = PyErr_CheckSignals() < 0;
  PyGILState_Release(g);
  return raised;
}

/* Installs check_signals for the calling thread's launches, once per thread, and the
 * process's signal handlers around launches (signals.c), once. */
static void install_signal_check(void) {
  static _Thread_local int installed;
  if (installed) return;
  kx_signals_install();
  kr_error_t err;
  installed = kr_set_interrupt_check(check_signals, NULL, &err) == KR_OK;
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
  if (kx_fork_check(device) < 0) {
    Py_DECREF(queue);
    return NULL;
  }
  kr_kernel_t *k = device_kernel(e, device);
  kr_queue_t *q = k ? kx_queue_handle(queue) : NULL;
  kr_arg_t kargs[KX_MAX_KARGS];
  kr_event_t *wait[KX_MAX_ARGS];
  uint32_t nk = 0, nwait = 0;
  if (!q || (deps != Py_None && gather_events(deps, wait, &nwait) < 0)) {
    Py_DECREF(queue);
    return NULL;
  }
  if (pack(a, n, kargs, &nk) < 0 || nk + 1 > KX_MAX_KARGS) {
    Py_DECREF(queue);
    return kx_raise_class("UnsupportedKernelArgumentError", "too many kernel arguments");
  }
  /* A launch owns a fresh status buffer when it is asynchronous, or when another thread's
   * synchronous launch of this kernel is using the shared one (the GIL is let go below). */
  int own = e->checked && (deps != Py_None || e->status_busy[device]);
  void *status = e->checked ? launch_status(e, device, own) : NULL;
  if ((e->checked && !status) || (e->prints && flush_python_stdout() < 0)) {
    if (status && own) {
      kr_error_t ferr;
      kr_free(status, &ferr);
    }
    Py_DECREF(queue);
    return NULL;
  }
  if (status) kargs[nk++] = (kr_arg_t){8, &status}; /* the hidden last argument */
  if (status && !own) e->status_busy[device] = 1;
  kr_error_t err;
  kr_event_t *ev = NULL;
  install_signal_check();
  int cpu = kr_device_info(kr_device_get((uint32_t)device))->type == KR_DEVICE_CPU;
  PyThreadState *ts = kx_gil_release();
  kx_signals_launch_begin(cpu);
  kr_status_t st = kr_launch(q, k, (uint32_t)s->ndim, s->global, s->nd ? s->local : NULL, nk, kargs,
                             nwait, wait, deps != Py_None ? &ev : NULL, &err);
  kx_signals_launch_end(cpu);
  if (st == KR_OK && e->prints && deps == Py_None) fflush(stdout); /* the CUDA driver's lines */
  kx_gil_restore(ts);
  if (status && !own) e->status_busy[device] = 0;
  if (PyErr_Occurred()) { /* a signal handler raised during the launch (see check_signals) */
    if (ev) kr_event_release(ev);
    if (status && own) {
      kr_error_t ferr;
      kr_free(status, &ferr);
    }
    Py_DECREF(queue);
    return NULL;
  }
  if (st != KR_OK) {
    if (status && own) {
      kr_error_t ferr;
      kr_free(status, &ferr);
    }
    Py_DECREF(queue);
    return kx_raise(&err);
  }
  if (deps == Py_None) {
    Py_DECREF(queue);
    int failed = status && kx_status_check(e->compiled, status, s->ndim) < 0;
    if (status && own) {
      kr_error_t ferr;
      kr_free(status, &ferr);
    }
    if (failed) return NULL;
    Py_RETURN_NONE;
  }
  PyObject *event = kx_event_new(ev, args);
  if (event && status) /* without an Event (out of memory) the buffer is left: in use */
    kx_event_attach_status(event, status, e->compiled, s->ndim);
  if (event && kx_queue_track(queue, event) < 0) Py_CLEAR(event);
  Py_DECREF(queue);
  return event;
}

/* launch(index_space, args: tuple, deps: tuple | None) -> None (sync) or Event (async). */
static PyObject *launcher_type;

int kx_is_launcher(PyObject *o) {
  return PyObject_TypeCheck(o, (PyTypeObject *)launcher_type);
}

/* Set by kapi/_numeric/lazy.py through rt_lazy_configure: its dict of pending (lazy) arrays and the
 * hook that evaluates those reading memory a launch may write. Checked before anything else,
 * so that no evaluation runs in the middle of classifying this launch's arguments. */
static PyObject *g_lazy_pending, *g_lazy_hook;

static int lazy_before_launch(PyObject *args) {
  if (!g_lazy_pending || PyDict_Size(g_lazy_pending) == 0) return 0;
  PyObject *r = PyObject_CallFunctionObjArgs(g_lazy_hook, args, NULL);
  Py_XDECREF(r);
  return r ? 0 : -1;
}

PyObject *kx_launch(PyObject *o, PyObject *space, PyObject *args, PyObject *deps) {
  kx_launcher *self = (kx_launcher *)o;
  kx_space s;
  if (lazy_before_launch(args) < 0) return NULL;
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
    descs[got] = kx_classify(PyTuple_GetItem(args, got), got, &a[got]);
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
    PyErr_SetString(PyExc_TypeError, "Launcher(dispatcher, nparams, names, item_first=False)");
    return -1;
  }
  int item_first = 0;
  if (!PyArg_ParseTuple(args, "OnO!|p", &disp, &nparams, &PyTuple_Type, &names, &item_first))
    return -1;
  self->item_first = item_first;
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

/* rt_launch_configure(Array, NdRange, arg_desc, host_queue): the Python pieces of the path. */
static PyObject *py_configure(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *at, *nt, *desc, *hq;
  if (!PyArg_ParseTuple(args, "OOOO", &at, &nt, &desc, &hq)) return NULL;
  Py_INCREF(nt), Py_INCREF(hq);
  Py_XDECREF(g_ndrange_type), g_ndrange_type = nt;
  Py_XDECREF(g_host_queue), g_host_queue = hq;
  host_pick_clear(&g_host_picks[0]);
  host_pick_clear(&g_host_picks[1]);
  if (kx_args_configure(at, desc) < 0 || kx_slot_lookup(nt, g_global_name, &g_global_slot) < 0 ||
      kx_slot_lookup(nt, g_local_name, &g_local_slot) < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* rt_lazy_configure(pending: dict, before_launch: callable) */
static PyObject *py_lazy_configure(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *pending, *hook;
  if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &pending, &hook)) return NULL;
  Py_INCREF(pending), Py_INCREF(hook);
  Py_XDECREF(g_lazy_pending), g_lazy_pending = pending;
  Py_XDECREF(g_lazy_hook), g_lazy_hook = hook;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"rt_launch_configure", py_configure, METH_VARARGS, "Registers the Python launch helpers."},
    {"rt_lazy_configure", py_lazy_configure, METH_VARARGS,
     "Registers kapi/_numeric/lazy.py's pending arrays and its hook run before launches."},
    {NULL, NULL, 0, NULL},
};

int kx_launch_register(PyObject *m) {
  if (!(g_global_name = PyUnicode_InternFromString("_global_range")) ||
      !(g_local_name = PyUnicode_InternFromString("_local_range")) ||
      !(g_specialize_name = PyUnicode_InternFromString("_specialize")) ||
      !(g_prepare_name = PyUnicode_InternFromString("_prepare_device")) ||
      !(S_ITEM = PyUnicode_InternFromString("item")) ||
      !(S_NDITEM = PyUnicode_InternFromString("nditem")))
    return -1;
  if (kx_args_register(m) < 0) return -1;
  if (!(launcher_type = kx_add_type(m, &launcher_spec, "Launcher"))) return -1;
  return PyModule_AddFunctions(m, methods);
}

int kx_runtime_register(PyObject *m) {
  if (kx_fork_register(m) || kx_device_register(m) || kx_queue_register(m) ||
      kx_memory_register(m) || kx_event_register(m) || kx_launch_register(m) ||
      kx_call_register(m) || kx_dlpack_register(m) || kx_module_register(m) || kx_capi_register(m))
    return -1;
  return 0;
}
