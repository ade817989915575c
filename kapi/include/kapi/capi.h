/* kapi's C API for native extensions: kapi arrays (pointer, shape, strides, dtype, device),
 * the Level Zero handles of their device and queue, creating arrays, and launching kernels that
 * kapi compiled, from C or C++ code of another CPython extension.
 *
 *   #include <kapi/capi.h>          (the folder from kapi.get_include(), or CMake's kapi::headers)
 *
 *   PyMODINIT_FUNC PyInit_myext(void) {
 *     if (kapi_import_capi() < 0) return NULL;   (imports kapi; ImportError when too old)
 *     ...
 *   }
 *
 * Then call the kapi_* functions below. The table of functions lives in kapi's own extension and
 * is handed over in a PyCapsule; kapi_import_capi fetches it once per translation unit (a file
 * that includes this header): call it in each file that uses the API, before its first use.
 *
 * Compatibility: the table starts with its version and size and only ever grows at the end, so
 * an extension built against version N runs with any kapi offering version N or later, and
 * kapi_import_capi refuses an older one. Define KAPI_CAPI_REQUIRED_VERSION (before including)
 * to accept an older kapi when you only use what it has (check with KAPI_CAPI_HAS).
 *
 * Conventions: the API is C99 and C++ compatible and needs the GIL, as any Python C API.
 * Functions returning int give -1, and functions returning a pointer NULL, with a Python
 * exception set on failure (TypeError for an object that is not a kapi array, kernel, device or
 * queue). PyObject results are new references; raw pointers and handles are borrowed (see
 * each). kapi arrays have strides in bytes, as NumPy; element strides are also given.
 */
#ifndef KAPI_CAPI_H
#define KAPI_CAPI_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include <stddef.h>
#include <stdint.h>

/* The version of the table this header describes: the last entry it declares is version 1's. */
#define KAPI_CAPI_VERSION 1

/* The capsule's name; the module kapi._lib._kapi holds it as _C_API. */
#define KAPI_CAPI_CAPSULE_NAME "kapi._lib._kapi._C_API"

#ifndef KAPI_CAPI_REQUIRED_VERSION
#define KAPI_CAPI_REQUIRED_VERSION KAPI_CAPI_VERSION
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Level Zero handles, as void * so that no Level Zero header is needed: cast them to
 * ze_driver_handle_t, ze_device_handle_t, ze_context_handle_t and ze_command_list_handle_t. */
typedef void *kapi_ze_driver_handle_t;
typedef void *kapi_ze_device_handle_t;
typedef void *kapi_ze_context_handle_t;
typedef void *kapi_ze_command_list_handle_t;

typedef struct kapi_capi {
  uint32_t version; /* KAPI_CAPI_VERSION of the kapi that filled the table */
  uint32_t size;    /* sizeof(kapi_capi_t) there: entries past it are absent */

  /* --- version 1 --- */

  /* 1 when obj is a kapi array (kapi.Array or a subclass), 0 when not, -1 on error. */
  int (*array_check)(PyObject *obj);
  /* The address of element 0. Borrowed: valid while the array lives. A pending array (a lazy
   * expression) is computed first. Launches that kapi runs asynchronously may still be using it:
   * queue_wait(array_queue(a)) first where that matters. NULL always means an error (ValueError
   * for an empty array imported from another library without memory). */
  void *(*array_data)(PyObject *array);
  int (*array_ndim)(PyObject *array);
  /* Write the extents (shape) / strides into out[0..ndim-1]. n is out's capacity; returns ndim,
   * or -1 (ValueError when ndim > n). array_strides gives bytes (as NumPy's strides),
   * array_element_strides elements (bytes / itemsize; ValueError where a stride is not a
   * multiple of the itemsize). */
  int (*array_shape)(PyObject *array, int64_t *out, int n);
  int (*array_strides)(PyObject *array, int64_t *out, int n);
  int (*array_element_strides)(PyObject *array, int64_t *out, int n);
  /* The element type: NumPy's type number (dtype.num, NPY_FLOAT32 = 11 ...), NumPy's type
   * character (dtype.char: 'f' float32, 'd' float64, 'i' int32, 'l' int64 ...), and the size of
   * one element in bytes. */
  int (*array_typenum)(PyObject *array);
  int (*array_dtype_char)(PyObject *array);
  Py_ssize_t (*array_itemsize)(PyObject *array);
  /* 1 when the host may read and write the memory through array_data's pointer (kapi's CPU
   * device, or host or shared USM), 0 when it is device memory of a GPU. */
  int (*array_host_accessible)(PyObject *array);
  /* The array's kapi.Device and kapi.Queue (new references). */
  PyObject *(*array_device)(PyObject *array);
  PyObject *(*array_queue)(PyObject *array);
  /* A new, uninitialised kapi array: kapi.empty(shape, dtype, device=device). dtype is any
   * NumPy dtype string ("float32", "f4", "i8" ...), or NULL for kapi's default; device is a
   * kapi.Device, kapi.Queue, a filter string (str) or NULL for the default device. */
  PyObject *(*empty)(int ndim, const int64_t *shape, const char *dtype, PyObject *device);

  /* The Level Zero handles of a kapi.Device: its driver, the device, and the context kapi
   * allocates its memory in. Borrowed and owned by kapi: valid for the process's life (while
   * kapi is loaded); never destroy or release them. */
  kapi_ze_driver_handle_t (*device_ze_driver)(PyObject *device);
  kapi_ze_device_handle_t (*device_ze_device)(PyObject *device);
  kapi_ze_context_handle_t (*device_ze_context)(PyObject *device);
  /* The immediate command list kapi appends a kapi.Queue's launches and copies to. Borrowed:
   * valid while the queue lives. On kapi's CPU and CUDA drivers it runs in order, yours and
   * kapi's commands alike; on other drivers (Intel's GPU driver) wait for the queue before
   * appending, and for your commands before kapi's next use. kapi appends under a lock of its
   * own: append only while no other thread uses this queue through kapi. */
  kapi_ze_command_list_handle_t (*queue_ze_command_list)(PyObject *queue);
  /* Blocks until everything submitted to the kapi.Queue so far has completed (queue.wait()). */
  int (*queue_wait)(PyObject *queue);

  /* Launches kernel (a @kapi.kernel function) over an ndim-dimensional (1 to 3) index space
   * of global[0..ndim-1] work-items, in work-groups of local[0..ndim-1] (an NdRange), or of
   * kapi's choice when local is NULL (a Range), with the nargs Python objects args as its
   * arguments (kapi arrays, NumPy arrays on the CPU device, Python or NumPy scalars). The same
   * path as kapi.call_kernel: compiled once per argument types, launched on the device the
   * arrays live on; call_kernel waits for the kernel, call_kernel_async returns a new reference
   * to its event (an object with .wait()) once it is submitted after the ndeps events deps. */
  int (*call_kernel)(PyObject *kernel, int ndim, const size_t *global, const size_t *local,
                     PyObject *const *args, Py_ssize_t nargs);
  PyObject *(*call_kernel_async)(PyObject *kernel, int ndim, const size_t *global,
                                 const size_t *local, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *const *deps, Py_ssize_t ndeps);
} kapi_capi_t;

/* Whether the table in use has an entry (a field name of kapi_capi_t): always true for those of
 * KAPI_CAPI_REQUIRED_VERSION and before. */
#define KAPI_CAPI_HAS(field)                                                                       \
  (kapi_capi != NULL && offsetof(kapi_capi_t, field) + sizeof(kapi_capi->field) <= kapi_capi->size)

#ifndef KAPI_CAPI_TABLE_ONLY /* kapi's own extension fills the table and needs no more */

/* The table, once kapi_import_capi has run in this translation unit. */
static const kapi_capi_t *kapi_capi = NULL;

/* Imports kapi and fetches its C API: 0, or -1 with ImportError set (kapi missing, or older
 * than KAPI_CAPI_REQUIRED_VERSION). Cheap after the first call. */
static inline int kapi_import_capi(void) {
  if (kapi_capi) return 0;
  PyObject *mod = PyImport_ImportModule("kapi._lib._kapi");
  if (!mod) return -1;
  PyObject *cap = PyObject_GetAttrString(mod, "_C_API");
  Py_DECREF(mod);
  if (!cap) return -1;
  const kapi_capi_t *t = (const kapi_capi_t *)PyCapsule_GetPointer(cap, KAPI_CAPI_CAPSULE_NAME);
  Py_DECREF(cap); /* the module keeps the capsule, and the table, for the process's life */
  if (!t) return -1;
  if (t->version < KAPI_CAPI_REQUIRED_VERSION) {
    PyErr_Format(PyExc_ImportError,
                 "this extension needs kapi's C API version %d, and the kapi installed offers "
                 "version %d: install a newer kapi",
                 (int)KAPI_CAPI_REQUIRED_VERSION, (int)t->version);
    return -1;
  }
  kapi_capi = t;
  return 0;
}

/* The API, as functions over the table (see kapi_capi_t for each). */
static inline int kapi_array_check(PyObject *obj) {
  return kapi_capi->array_check(obj);
}
static inline void *kapi_array_data(PyObject *a) {
  return kapi_capi->array_data(a);
}
static inline int kapi_array_ndim(PyObject *a) {
  return kapi_capi->array_ndim(a);
}
static inline int kapi_array_shape(PyObject *a, int64_t *out, int n) {
  return kapi_capi->array_shape(a, out, n);
}
static inline int kapi_array_strides(PyObject *a, int64_t *out, int n) {
  return kapi_capi->array_strides(a, out, n);
}
static inline int kapi_array_element_strides(PyObject *a, int64_t *out, int n) {
  return kapi_capi->array_element_strides(a, out, n);
}
static inline int kapi_array_typenum(PyObject *a) {
  return kapi_capi->array_typenum(a);
}
static inline int kapi_array_dtype_char(PyObject *a) {
  return kapi_capi->array_dtype_char(a);
}
static inline Py_ssize_t kapi_array_itemsize(PyObject *a) {
  return kapi_capi->array_itemsize(a);
}
static inline int kapi_array_host_accessible(PyObject *a) {
  return kapi_capi->array_host_accessible(a);
}
static inline PyObject *kapi_array_device(PyObject *a) {
  return kapi_capi->array_device(a);
}
static inline PyObject *kapi_array_queue(PyObject *a) {
  return kapi_capi->array_queue(a);
}
static inline PyObject *kapi_empty(int ndim, const int64_t *shape, const char *dtype,
                                   PyObject *device) {
  return kapi_capi->empty(ndim, shape, dtype, device);
}
static inline kapi_ze_driver_handle_t kapi_device_ze_driver(PyObject *device) {
  return kapi_capi->device_ze_driver(device);
}
static inline kapi_ze_device_handle_t kapi_device_ze_device(PyObject *device) {
  return kapi_capi->device_ze_device(device);
}
static inline kapi_ze_context_handle_t kapi_device_ze_context(PyObject *device) {
  return kapi_capi->device_ze_context(device);
}
static inline kapi_ze_command_list_handle_t kapi_queue_ze_command_list(PyObject *queue) {
  return kapi_capi->queue_ze_command_list(queue);
}
static inline int kapi_queue_wait(PyObject *queue) {
  return kapi_capi->queue_wait(queue);
}
static inline int kapi_call_kernel(PyObject *kernel, int ndim, const size_t *global,
                                   const size_t *local, PyObject *const *args, Py_ssize_t nargs) {
  return kapi_capi->call_kernel(kernel, ndim, global, local, args, nargs);
}
static inline PyObject *kapi_call_kernel_async(PyObject *kernel, int ndim, const size_t *global,
                                               const size_t *local, PyObject *const *args,
                                               Py_ssize_t nargs, PyObject *const *deps,
                                               Py_ssize_t ndeps) {
  return kapi_capi->call_kernel_async(kernel, ndim, global, local, args, nargs, deps, ndeps);
}

#endif /* KAPI_CAPI_TABLE_ONLY */

#ifdef __cplusplus
}
#endif

#endif /* KAPI_CAPI_H */
