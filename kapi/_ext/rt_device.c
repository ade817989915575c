/* kapi extension: runtime initialisation and the device list. Python builds kapi.Device
 * objects from the plain dicts returned here (kapi/_memory/device.py), so this file stays a thin
 * copy of kr_device_info_t.
 */
#include "fork.h"
#include "kx.h"

kr_device_t *kx_device(long index) {
  if (index < 0 || (unsigned long)index >= kr_device_count()) {
    PyErr_Format(PyExc_IndexError, "no kapi device with index %ld", index);
    return NULL;
  }
  return kr_device_get((uint32_t)index);
}

static PyObject *py_init(PyObject *self, PyObject *noargs) {
  (void)self;
  (void)noargs;
  kr_error_t err;
  kr_status_t st;
  PyThreadState *ts = kx_gil_release();
  st = kr_init(&err);
  kx_gil_restore(ts);
  kx_fork_note_started();
  if (st != KR_OK && st != KR_ERR_NO_DEVICE) return kx_raise(&err);
  Py_RETURN_NONE;
}

static PyObject *py_driver_list(PyObject *self, PyObject *noargs) {
  (void)self;
  (void)noargs;
  return PyUnicode_FromString(kr_driver_list());
}

static PyObject *py_device_count(PyObject *self, PyObject *noargs) {
  (void)self;
  (void)noargs;
  kx_fork_note_started();
  return PyLong_FromUnsignedLong(kr_device_count());
}

static PyObject *u32_tuple(const uint32_t *v, unsigned n) {
  PyObject *t = PyTuple_New(n);
  for (unsigned i = 0; t && i < n; i++)
    PyTuple_SetItem(t, i, PyLong_FromUnsignedLong(v[i]));
  return t;
}

static int set_item(PyObject *d, const char *key, PyObject *v) {
  if (!v) return -1;
  int rc = PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
  return rc;
}

static PyObject *info_dict(const kr_device_info_t *in) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  unsigned nsg = in->num_sub_group_sizes > 8 ? 8 : in->num_sub_group_sizes;
  if (set_item(d, "index", PyLong_FromUnsignedLong(in->index)) ||
      set_item(d, "name", PyUnicode_FromString(in->name)) ||
      set_item(d, "type", PyLong_FromLong(in->type)) ||
      set_item(d, "vendor_id", PyLong_FromUnsignedLong(in->vendor_id)) ||
      set_item(d, "device_id", PyLong_FromUnsignedLong(in->device_id)) ||
      set_item(d, "vendor_name", PyUnicode_FromString(in->vendor_name)) ||
      set_item(d, "driver_name", PyUnicode_FromString(in->driver_name)) ||
      set_item(d, "driver_index", PyLong_FromUnsignedLong(in->driver_index)) ||
      set_item(d, "driver_version", PyLong_FromUnsignedLong(in->driver_version)) ||
      set_item(d, "compute_units", PyLong_FromUnsignedLong(in->compute_units)) ||
      set_item(d, "threads_per_compute_unit",
               PyLong_FromUnsignedLong(in->threads_per_compute_unit)) ||
      set_item(d, "core_clock_mhz", PyLong_FromUnsignedLong(in->core_clock_mhz)) ||
      set_item(d, "max_work_group_size", PyLong_FromUnsignedLong(in->max_work_group_size)) ||
      set_item(d, "max_group_size", u32_tuple(in->max_group_size, 3)) ||
      set_item(d, "max_group_count", u32_tuple(in->max_group_count, 3)) ||
      set_item(d, "local_mem_size", PyLong_FromUnsignedLongLong(in->local_mem_size)) ||
      set_item(d, "global_mem_size", PyLong_FromUnsignedLongLong(in->global_mem_size)) ||
      set_item(d, "max_alloc_size", PyLong_FromUnsignedLongLong(in->max_alloc_size)) ||
      set_item(d, "fp16", PyBool_FromLong(in->fp16)) ||
      set_item(d, "fp64", PyBool_FromLong(in->fp64)) ||
      set_item(d, "sub_group_sizes", u32_tuple(in->sub_group_sizes, nsg)) ||
      set_item(d, "spirv_version", PyLong_FromUnsignedLong(in->spirv_version)) ||
      set_item(d, "uuid", PyBytes_FromStringAndSize((const char *)in->uuid, 16))) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyObject *py_device_info(PyObject *self, PyObject *arg) {
  (void)self;
  long i = PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  kr_device_t *dev = kx_device(i);
  if (!dev) return NULL;
  return info_dict(kr_device_info(dev));
}

/* rt_can_access_peer(i, j): kr_device_can_access_peer of two device indices. */
static PyObject *py_can_access_peer(PyObject *self, PyObject *args) {
  (void)self;
  long i, j;
  if (!PyArg_ParseTuple(args, "ll", &i, &j)) return NULL;
  kr_device_t *a = kx_device(i);
  kr_device_t *b = a ? kx_device(j) : NULL;
  if (!b) return NULL;
  return PyBool_FromLong(kr_device_can_access_peer(a, b) == 1);
}

static PyMethodDef methods[] = {
    {"rt_init", py_init, METH_NOARGS, "Initialises the runtime (drivers, devices)."},
    {"rt_driver_list", py_driver_list, METH_NOARGS, "The driver list given to the loader."},
    {"rt_device_count", py_device_count, METH_NOARGS, "Number of devices."},
    {"rt_device_info", py_device_info, METH_O, "Properties of device i, as a dict."},
    {"rt_can_access_peer", py_can_access_peer, METH_VARARGS,
     "Whether copies between devices i and j go directly (peer access)."},
    {NULL, NULL, 0, NULL},
};

int kx_device_register(PyObject *m) {
  return PyModule_AddFunctions(m, methods);
}
