/* kapi extension: native binaries of device programs, for the disk cache (kapi/_cache/store.py).
 * rt_native_binary builds (or finds) the device's module for a SPIR-V module and returns the
 * driver's native binary of it; rt_cache_native gives the runtime's module cache a module
 * made from such a binary, so the launch path's kr_kernel_get builds nothing.
 */
#include "fork.h"
#include "kx.h"

#include <stdlib.h>

static PyObject *py_native_binary(PyObject *self, PyObject *args) {
  (void)self;
  long device;
  const char *spirv;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "ly#:rt_native_binary", &device, &spirv, &n)) return NULL;
  kr_device_t *dev = kx_device(device);
  if (!dev) return NULL;
  void *bin = NULL;
  size_t len = 0;
  kr_error_t err;
  PyThreadState *ts = kx_gil_release();
  kr_status_t st = kr_module_native_binary(dev, spirv, (size_t)n, &bin, &len, &err);
  kx_gil_restore(ts);
  if (st == KR_ERR_UNSUPPORTED) Py_RETURN_NONE;
  if (st != KR_OK) return kx_raise(&err);
  PyObject *r = PyBytes_FromStringAndSize(bin, (Py_ssize_t)len);
  free(bin);
  return r;
}

/* None when the module is in the runtime's cache; the driver's reason (str) when it refused
 * the binary, in which case the launch builds from SPIR-V as usual. */
static PyObject *py_cache_native(PyObject *self, PyObject *args) {
  (void)self;
  long device;
  const char *spirv, *native;
  Py_ssize_t n, nn;
  if (!PyArg_ParseTuple(args, "ly#y#:rt_cache_native", &device, &spirv, &n, &native, &nn))
    return NULL;
  kr_device_t *dev = kx_device(device);
  if (!dev) return NULL;
  kr_error_t err;
  PyThreadState *ts = kx_gil_release();
  kr_status_t st = kr_module_cache_native(dev, spirv, (size_t)n, native, (size_t)nn, &err);
  kx_gil_restore(ts);
  if (st == KR_OK) Py_RETURN_NONE;
  return PyUnicode_FromString(err.message);
}

static PyMethodDef methods[] = {
    {"rt_native_binary", py_native_binary, METH_VARARGS,
     "rt_native_binary(device, spirv) -> the driver's native binary of the module, or None."},
    {"rt_cache_native", py_cache_native, METH_VARARGS,
     "rt_cache_native(device, spirv, native) -> None, or why the driver refused the binary."},
    {NULL, NULL, 0, NULL},
};

int kx_module_register(PyObject *m) {
  return PyModule_AddFunctions(m, methods);
}
