/* kapi extension: DLPack both ways, in the unversioned (0.8) and versioned (1.0) forms.
 * Export wraps a kapi array's memory in a "dltensor" / "dltensor_versioned" capsule whose
 * deleter releases the array's owner; import takes a producer's capsule, marks it used, and
 * returns a holder object whose destruction calls the producer's deleter.
 * Device types: kDLCPU (kapi's CPU driver), kDLCUDA (the CUDA driver), kDLOneAPI (Intel).
 */
#include "kx.h"

#include <stddef.h>
#include <string.h>

/* The DLPack ABI (dlpack.h 1.0), the parts used here. */
typedef struct {
  int32_t device_type;
  int32_t device_id;
} DLDevice;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define KX_DLPACK_MAX_DIMS 8

/* What an exported tensor owns: both managed forms (one is used), shape, strides, owner. */
typedef struct {
  DLManagedTensor m;
  DLManagedTensorVersioned v;
  int64_t shape[KX_DLPACK_MAX_DIMS], strides[KX_DLPACK_MAX_DIMS];
  PyObject *owner;
} kx_export;

static void export_free(kx_export *x) {
  PyGILState_STATE g = PyGILState_Ensure(); /* consumers may call deleters from any thread */
  Py_XDECREF(x->owner);
  PyMem_Free(x);
  PyGILState_Release(g);
}

static void export_deleter(DLManagedTensor *m) {
  export_free(m->manager_ctx);
}
static void export_deleter_v(DLManagedTensorVersioned *v) {
  export_free(v->manager_ctx);
}

/* Only an unconsumed capsule still owns the tensor; a consumer renames it. */
static void export_capsule_free(PyObject *cap) {
  if (PyCapsule_IsValid(cap, "dltensor")) {
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m && m->deleter) m->deleter(m);
  } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    DLManagedTensorVersioned *v = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (v && v->deleter) v->deleter(v);
  }
}

static int fill_tensor(DLTensor *t, kx_export *x, PyObject *ptr, PyObject *shape, PyObject *strides,
                       int code, int bits, int dev_type, int dev_id) {
  Py_ssize_t nd = PyTuple_Size(shape);
  t->data = PyLong_AsVoidPtr(ptr);
  for (Py_ssize_t i = 0; i < nd; i++) {
    x->shape[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
    x->strides[i] = PyLong_AsLongLong(PyTuple_GetItem(strides, i));
  }
  t->device = (DLDevice){dev_type, dev_id};
  t->ndim = (int32_t)nd;
  t->dtype = (DLDataType){(uint8_t)code, (uint8_t)bits, 1};
  t->shape = x->shape;
  t->strides = x->strides;
  return PyErr_Occurred() ? -1 : 0;
}

/* rt_dlpack_export(owner, ptr, shape, strides, code, bits, device_type, device_id,
 *                  versioned) -> capsule */
static PyObject *py_export(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *owner, *ptr, *shape, *strides;
  int code, bits, dev_type, dev_id, versioned = 0;
  if (!PyArg_ParseTuple(args, "OOO!O!iiii|p", &owner, &ptr, &PyTuple_Type, &shape, &PyTuple_Type,
                        &strides, &code, &bits, &dev_type, &dev_id, &versioned))
    return NULL;
  Py_ssize_t nd = PyTuple_Size(shape);
  if (nd > KX_DLPACK_MAX_DIMS || PyTuple_Size(strides) != nd) {
    PyErr_SetString(PyExc_BufferError, "DLPack export: at most 8 dimensions");
    return NULL;
  }
  kx_export *x = PyMem_Calloc(1, sizeof *x);
  if (!x) return PyErr_NoMemory();
  DLTensor *t = versioned ? &x->v.dl_tensor : &x->m.dl_tensor;
  if (fill_tensor(t, x, ptr, shape, strides, code, bits, dev_type, dev_id) < 0) {
    PyMem_Free(x);
    return NULL;
  }
  Py_INCREF(owner);
  x->owner = owner;
  x->m.manager_ctx = x->v.manager_ctx = x;
  x->m.deleter = export_deleter;
  x->v.deleter = export_deleter_v;
  x->v.version = (DLPackVersion){1, 0};
  x->v.flags = 0; /* writable, not a copy */
  PyObject *cap = versioned ? PyCapsule_New(&x->v, "dltensor_versioned", export_capsule_free)
                            : PyCapsule_New(&x->m, "dltensor", export_capsule_free);
  if (!cap) export_free(x);
  return cap;
}

static void holder_free(PyObject *cap) {
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "kapi.dlpack_holder");
  if (m && m->deleter) m->deleter(m);
}

static void holder_free_v(PyObject *cap) {
  DLManagedTensorVersioned *v = PyCapsule_GetPointer(cap, "kapi.dlpack_holder_v");
  if (v && v->deleter) v->deleter(v);
}

static PyObject *tensor_tuple(const DLTensor *t, PyObject *holder, int readonly) {
  if (t->ndim < 0 || t->ndim > KX_DLPACK_MAX_DIMS) {
    PyErr_SetString(PyExc_BufferError, "DLPack import: at most 8 dimensions");
    return NULL;
  }
  PyObject *shape = PyTuple_New(t->ndim);
  PyObject *strides = t->strides ? PyTuple_New(t->ndim) : (Py_INCREF(Py_None), Py_None);
  for (int i = 0; shape && strides && i < t->ndim; i++) {
    PyTuple_SetItem(shape, i, PyLong_FromLongLong(t->shape[i]));
    if (t->strides) PyTuple_SetItem(strides, i, PyLong_FromLongLong(t->strides[i]));
  }
  if (!shape || !strides) {
    Py_XDECREF(shape), Py_XDECREF(strides);
    return NULL;
  }
  return Py_BuildValue("(NNNiiiiiOi)", PyLong_FromVoidPtr((char *)t->data + t->byte_offset), shape,
                       strides, t->dtype.code, t->dtype.bits, t->dtype.lanes, t->device.device_type,
                       t->device.device_id, holder, readonly);
}

/* rt_dlpack_import(capsule) -> (ptr, shape, strides|None, code, bits, lanes, device_type,
 * device_id, holder, readonly). The holder keeps the producer's memory until it is dropped;
 * the capsule is marked used first, so a failure after that still frees through the holder. */
static PyObject *py_import(PyObject *self, PyObject *cap) {
  (void)self;
  int versioned = PyCapsule_IsValid(cap, "dltensor_versioned");
  if (!versioned && !PyCapsule_IsValid(cap, "dltensor")) {
    PyErr_SetString(PyExc_TypeError,
                    "expected an unconsumed DLPack capsule ('dltensor' or 'dltensor_versioned'; "
                    "a capsule can be consumed only once)");
    return NULL;
  }
  const DLTensor *t;
  PyObject *holder;
  int readonly = 0;
  if (versioned) {
    DLManagedTensorVersioned *v = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (v->version.major != 1) {
      PyErr_Format(PyExc_BufferError, "DLPack version %u.%u is not supported (1.x is)",
                   v->version.major, v->version.minor);
      return NULL;
    }
    t = &v->dl_tensor;
    readonly = (int)(v->flags & 1);
    holder = PyCapsule_New(v, "kapi.dlpack_holder_v", holder_free_v);
  } else {
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    t = &m->dl_tensor;
    holder = PyCapsule_New(m, "kapi.dlpack_holder", holder_free);
  }
  if (!holder) return NULL;
  if (PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor") < 0) {
    PyCapsule_SetDestructor(holder, NULL);
    Py_DECREF(holder);
    return NULL;
  }
  PyObject *r = tensor_tuple(t, holder, readonly);
  Py_DECREF(holder);
  return r;
}

static PyMethodDef methods[] = {
    {"rt_dlpack_export", py_export, METH_VARARGS, "A DLPack capsule over kapi memory."},
    {"rt_dlpack_import", py_import, METH_O, "Consumes a DLPack capsule."},
    {NULL, NULL, 0, NULL},
};

int kx_dlpack_register(PyObject *m) {
  return PyModule_AddFunctions(m, methods);
}
