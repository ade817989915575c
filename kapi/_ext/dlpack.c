/* kapi extension: DLPack both ways. Export wraps a kapi array's memory in a "dltensor"
 * capsule whose deleter releases the array's owner; import takes a producer's capsule, marks
 * it used, and returns a holder object whose destruction calls the producer's deleter.
 * Device types: kDLCPU (kapi's CPU driver), kDLCUDA (the CUDA driver), kDLOneAPI (Intel).
 */
#include "kx.h"

#include <string.h>

/* DLPack 0.8 ABI (dlpack.h), the parts used here. */
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

/* What an exported tensor owns: the DLManagedTensor, its shape/strides and the owner. */
typedef struct {
  DLManagedTensor m;
  int64_t shape[8], strides[8];
  PyObject *owner;
} kx_export;

static void export_deleter(DLManagedTensor *m) {
  kx_export *x = (kx_export *)m;
  PyGILState_STATE g = PyGILState_Ensure(); /* consumers may call this from any thread */
  Py_XDECREF(x->owner);
  PyMem_Free(x);
  PyGILState_Release(g);
}

static void export_capsule_free(PyObject *cap) {
  /* Only an unconsumed capsule still owns the tensor; a consumer renames it. */
  if (PyCapsule_IsValid(cap, "dltensor")) {
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m && m->deleter) m->deleter(m);
  }
}

/* rt_dlpack_export(owner, ptr, shape, strides, code, bits, device_type, device_id) */
static PyObject *py_export(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *owner, *ptr, *shape, *strides;
  int code, bits, dtype, did;
  if (!PyArg_ParseTuple(args, "OOO!O!iiii", &owner, &ptr, &PyTuple_Type, &shape, &PyTuple_Type,
                        &strides, &code, &bits, &dtype, &did))
    return NULL;
  Py_ssize_t nd = PyTuple_Size(shape);
  if (nd > 8 || PyTuple_Size(strides) != nd) {
    PyErr_SetString(PyExc_ValueError, "DLPack export: at most 8 dimensions");
    return NULL;
  }
  kx_export *x = PyMem_Calloc(1, sizeof *x);
  if (!x) return PyErr_NoMemory();
  x->m.dl_tensor.data = PyLong_AsVoidPtr(ptr);
  for (Py_ssize_t i = 0; i < nd; i++) {
    x->shape[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
    x->strides[i] = PyLong_AsLongLong(PyTuple_GetItem(strides, i));
  }
  if (PyErr_Occurred()) {
    PyMem_Free(x);
    return NULL;
  }
  x->m.dl_tensor.device = (DLDevice){dtype, did};
  x->m.dl_tensor.ndim = (int32_t)nd;
  x->m.dl_tensor.dtype = (DLDataType){(uint8_t)code, (uint8_t)bits, 1};
  x->m.dl_tensor.shape = x->shape;
  x->m.dl_tensor.strides = x->strides;
  x->m.manager_ctx = x;
  x->m.deleter = export_deleter;
  Py_INCREF(owner);
  x->owner = owner;
  PyObject *cap = PyCapsule_New(&x->m, "dltensor", export_capsule_free);
  if (!cap) export_deleter(&x->m);
  return cap;
}

static void holder_free(PyObject *cap) {
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "kapi.dlpack_holder");
  if (m && m->deleter) m->deleter(m);
}

/* rt_dlpack_import(capsule) -> (ptr, shape, strides|None, code, bits, lanes, device_type,
 * device_id, holder). The holder keeps the producer's memory until it is dropped. */
static PyObject *py_import(PyObject *self, PyObject *cap) {
  (void)self;
  if (!PyCapsule_IsValid(cap, "dltensor")) {
    PyErr_SetString(PyExc_TypeError,
                    "expected an unconsumed DLPack capsule named 'dltensor' (a capsule can "
                    "be consumed only once)");
    return NULL;
  }
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
  DLTensor *t = &m->dl_tensor;
  if (t->ndim < 0 || t->ndim > 8) {
    PyErr_SetString(PyExc_ValueError, "DLPack import: at most 8 dimensions");
    return NULL;
  }
  PyObject *shape = PyTuple_New(t->ndim);
  PyObject *strides = t->strides ? PyTuple_New(t->ndim) : (Py_INCREF(Py_None), Py_None);
  for (int i = 0; shape && strides && i < t->ndim; i++) {
    PyTuple_SetItem(shape, i, PyLong_FromLongLong(t->shape[i]));
    if (t->strides) PyTuple_SetItem(strides, i, PyLong_FromLongLong(t->strides[i]));
  }
  PyObject *holder = PyCapsule_New(m, "kapi.dlpack_holder", holder_free);
  if (!shape || !strides || !holder || PyCapsule_SetName(cap, "used_dltensor") < 0) {
    if (holder) PyCapsule_SetDestructor(holder, NULL);
    Py_XDECREF(shape), Py_XDECREF(strides), Py_XDECREF(holder);
    return NULL;
  }
  return Py_BuildValue("(NNNiiiiiN)", PyLong_FromVoidPtr((char *)t->data + t->byte_offset), shape,
                       strides, t->dtype.code, t->dtype.bits, t->dtype.lanes, t->device.device_type,
                       t->device.device_id, holder);
}

static PyMethodDef methods[] = {
    {"rt_dlpack_export", py_export, METH_VARARGS, "A DLPack capsule over kapi memory."},
    {"rt_dlpack_import", py_import, METH_O, "Consumes a DLPack capsule."},
    {NULL, NULL, 0, NULL},
};

int kx_dlpack_register(PyObject *m) {
  return PyModule_AddFunctions(m, methods);
}
