/* kapi extension: Event, the completion of one asynchronous command. It holds the command's
 * Python arguments (buffers, arrays) until the command is known complete, so memory in use by
 * a pending launch cannot be freed.
 */
#include "fork.h"
#include "kx.h"

#include <stdio.h>

typedef struct {
  PyObject_HEAD kr_event_t *ev;
  PyObject *keep;     /* arguments kept alive while pending; NULL once complete */
  void *status;       /* a launch of a kernel with assert: its status buffer, until checked */
  PyObject *compiled; /* and the kernel's CompiledKernel */
  int ndim;
} kx_event;

void kx_event_attach_status(PyObject *e, void *status, PyObject *compiled, int ndim) {
  kx_event *self = (kx_event *)e;
  self->status = status;
  Py_INCREF(compiled);
  self->compiled = compiled;
  self->ndim = ndim;
}

/* After completion: raise what the kernel's assert recorded (once), and free the buffer. */
static int check_status(kx_event *self) {
  if (!self->status) return 0;
  int rc = kx_status_check(self->compiled, self->status, self->ndim);
  kr_error_t err;
  kr_free(self->status, &err);
  self->status = NULL;
  Py_CLEAR(self->compiled);
  return rc;
}

PyObject *kx_event_type;

PyObject *kx_event_new(kr_event_t *ev, PyObject *keep) {
  PyTypeObject *tp = (PyTypeObject *)kx_event_type;
  allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
  kx_event *self = (kx_event *)alloc(tp, 0);
  if (!self) {
    kr_event_release(ev);
    return NULL;
  }
  self->ev = ev;
  Py_XINCREF(keep);
  self->keep = keep;
  self->status = NULL, self->compiled = NULL, self->ndim = 0;
  return (PyObject *)self;
}

kr_event_t *kx_event_handle(PyObject *e) {
  if (!e || !PyObject_TypeCheck(e, (PyTypeObject *)kx_event_type)) {
    PyErr_Format(PyExc_TypeError, "expected a kapi.Event, got %R",
                 e ? (PyObject *)Py_TYPE(e) : Py_None);
    return NULL;
  }
  return ((kx_event *)e)->ev;
}

int kx_event_done(PyObject *e) {
  kx_event *self = (kx_event *)e;
  if (!self->keep) return 1;
  if (kr_event_is_complete(self->ev) == 0) return 0;
  Py_CLEAR(self->keep);
  return 1;
}

static PyObject *event_wait(PyObject *o, PyObject *noargs) {
  (void)noargs;
  kx_event *self = (kx_event *)o;
  kr_error_t err;
  PyThreadState *ts = kx_gil_release();
  kr_status_t st = kr_event_wait(self->ev, &err);
  kx_gil_restore(ts);
  Py_CLEAR(self->keep);
  if (st != KR_OK) return kx_raise(&err);
  fflush(stdout); /* a CUDA kernel's print lines are in C's stdout buffer by now */
  if (check_status(self) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *event_complete(PyObject *o, void *closure) {
  (void)closure;
  kx_event *self = (kx_event *)o;
  int c = kr_event_is_complete(self->ev);
  if (c < 0) return kx_raise_msg("KR_ERR_DEVICE_LOST", "the command of this event failed");
  if (c) Py_CLEAR(self->keep);
  return PyBool_FromLong(c);
}

static void event_dealloc(PyObject *o) {
  kx_event *self = (kx_event *)o;
  if (self->status) { /* never waited for: wait before freeing what the launch writes */
    kr_error_t err;
    if (kr_event_wait(self->ev, &err) == KR_OK) kr_free(self->status, &err);
  }
  Py_XDECREF(self->compiled);
  kr_event_release(self->ev); /* safe while pending: the pool reuses it once signalled */
  Py_XDECREF(self->keep);
  PyTypeObject *tp = Py_TYPE(o);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

static PyObject *event_new_refused(PyTypeObject *t, PyObject *a, PyObject *k) {
  (void)t;
  (void)a;
  (void)k;
  PyErr_SetString(PyExc_TypeError, "kapi events come from call_kernel_async and copies");
  return NULL;
}

static PyMethodDef event_methods[] = {
    {"wait", event_wait, METH_NOARGS, "Blocks until the command has completed."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef event_getset[] = {
    {"is_complete", event_complete, NULL, "True once the command has completed.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot event_slots[] = {
    {Py_tp_dealloc, event_dealloc},
    {Py_tp_methods, event_methods},
    {Py_tp_getset, event_getset},
    {Py_tp_new, event_new_refused},
    {Py_tp_doc, "The completion of an asynchronous kapi command; wait() blocks on it."},
    {0, NULL},
};

static PyType_Spec event_spec = {"kapi.Event", sizeof(kx_event), 0, Py_TPFLAGS_DEFAULT,
                                 event_slots};

static PyObject *py_wait_all(PyObject *self, PyObject *seq) {
  (void)self;
  PyObject *fast = PySequence_Tuple(seq);
  if (!fast) return NULL;
  Py_ssize_t n = PyTuple_Size(fast);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *e = PyTuple_GetItem(fast, i);
    PyObject *r = kx_event_handle(e) ? event_wait(e, NULL) : NULL;
    if (!r) {
      Py_DECREF(fast);
      return NULL;
    }
    Py_DECREF(r);
  }
  Py_DECREF(fast);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"rt_wait_all", py_wait_all, METH_O, "Waits for every event of a sequence."},
    {NULL, NULL, 0, NULL},
};

int kx_event_register(PyObject *m) {
  if (!(kx_event_type = kx_add_type(m, &event_spec, "Event"))) return -1;
  return PyModule_AddFunctions(m, methods);
}
