/* kapi extension: RtQueue, a Python handle on a runtime queue (a device's default queue or
 * one of its own). It also keeps the events of asynchronous launches, and through them their
 * arguments, alive until they complete: dropping an event never frees a buffer in use.
 */
#include "fork.h"
#include "kx.h"

typedef struct {
  PyObject_HEAD kr_queue_t *q;
  int owned;           /* created with kr_queue_create (destroyed with the object) */
  long device;         /* runtime device index */
  PyObject *pending;   /* list of events of async commands, oldest first */
  Py_ssize_t prune_at; /* track() prunes once pending is this long (amortised: each query of
                        * an event is a driver call, too dear for every launch) */
} kx_queue;

enum { KX_PRUNE_MIN = 32 };

PyObject *kx_queue_type;

kr_queue_t *kx_queue_handle(PyObject *q) {
  if (!q || !PyObject_TypeCheck(q, (PyTypeObject *)kx_queue_type)) {
    PyErr_SetString(PyExc_TypeError, "expected a kapi runtime queue");
    return NULL;
  }
  return ((kx_queue *)q)->q;
}

/* Drops the completed events at the front (an in-order queue completes them in order). */
static int prune(kx_queue *self) {
  Py_ssize_t n = PyList_Size(self->pending), k = 0;
  while (k < n && kx_event_done(PyList_GetItem(self->pending, k)) == 1)
    k++;
  return k ? PyList_SetSlice(self->pending, 0, k, NULL) : 0;
}

int kx_queue_track(PyObject *q, PyObject *event) {
  kx_queue *self = (kx_queue *)q;
  if (PyList_Size(self->pending) >= self->prune_at) {
    if (prune(self) < 0) return -1;
    Py_ssize_t left = PyList_Size(self->pending);
    self->prune_at = left * 2 > KX_PRUNE_MIN ? left * 2 : KX_PRUNE_MIN;
  }
  return PyList_Append(self->pending, event);
}

static int queue_init(PyObject *o, PyObject *args, PyObject *kw) {
  kx_queue *self = (kx_queue *)o;
  long device;
  int own = 0;
  static char *kwlist[] = {"device", "own", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "l|p", kwlist, &device, &own)) return -1;
  kr_device_t *dev = kx_device(device);
  if (!dev) return -1;
  kr_error_t err;
  self->q = own ? kr_queue_create(dev, &err) : kr_device_queue(dev, &err);
  if (!self->q) {
    kx_raise(&err);
    return -1;
  }
  self->owned = own;
  self->device = device;
  self->pending = PyList_New(0);
  self->prune_at = KX_PRUNE_MIN;
  return self->pending ? 0 : -1;
}

static PyObject *queue_synchronize(PyObject *o, PyObject *noargs) {
  (void)noargs;
  kx_queue *self = (kx_queue *)o;
  kr_error_t err;
  PyThreadState *ts = kx_gil_release();
  kr_status_t st = kr_queue_synchronize(self->q, &err);
  kx_gil_restore(ts);
  if (st != KR_OK) return kx_raise(&err);
  if (prune(self) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *queue_device(PyObject *o, void *closure) {
  (void)closure;
  return PyLong_FromLong(((kx_queue *)o)->device);
}

static PyObject *queue_address(PyObject *o, void *closure) {
  (void)closure;
  return PyLong_FromVoidPtr(((kx_queue *)o)->q);
}

static void queue_dealloc(PyObject *o) {
  kx_queue *self = (kx_queue *)o;
  if (self->q && self->owned) {
    PyThreadState *ts = kx_gil_release();
    kr_queue_destroy(self->q); /* waits for its commands first */
    kx_gil_restore(ts);
  }
  Py_XDECREF(self->pending);
  PyTypeObject *tp = Py_TYPE(o);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

static PyMethodDef queue_methods[] = {
    {"synchronize", queue_synchronize, METH_NOARGS, "Waits for every command of the queue."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef queue_getset[] = {
    {"device_index", queue_device, NULL, "Runtime index of the queue's device.", NULL},
    {"address", queue_address, NULL, "The kr_queue_t pointer (for interop).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot queue_slots[] = {
    {Py_tp_init, queue_init},     {Py_tp_dealloc, queue_dealloc}, {Py_tp_methods, queue_methods},
    {Py_tp_getset, queue_getset}, {Py_tp_new, PyType_GenericNew}, {0, NULL},
};

static PyType_Spec queue_spec = {"kapi._lib._kapi.RtQueue", sizeof(kx_queue), 0, Py_TPFLAGS_DEFAULT,
                                 queue_slots};

int kx_queue_register(PyObject *m) {
  return (kx_queue_type = kx_add_type(m, &queue_spec, "RtQueue")) ? 0 : -1;
}
