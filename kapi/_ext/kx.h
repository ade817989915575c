/* kapi extension, runtime half: declarations shared by the files that bind libkapi_runtime
 * (devices, queues, USM buffers, events, DLPack, the launcher) to Python. Prefix kx_.
 * module.c calls kx_runtime_register() once; everything else is reached through it.
 */
#ifndef KAPI_EXT_KX_H
#define KAPI_EXT_KX_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include <kapi/runtime.h>

/* Adds the runtime functions and types to the module. 0 on success, -1 with an exception. */
int kx_runtime_register(PyObject *module);

/* Sets a Python exception built by kapi._errors.from_status from a runtime error. Returns
 * NULL so callers can `return kx_raise(&err);`. */
PyObject *kx_raise(const kr_error_t *err);

/* Same, from a status name and a message (for errors found in the extension itself). */
PyObject *kx_raise_msg(const char *status, const char *fmt, ...);

/* A Python exception of kapi._errors.<cls>(message); returns NULL. */
PyObject *kx_raise_class(const char *cls, const char *fmt, ...);

/* Creates a type from spec and adds it to the module as name (module.c). Returns a new
 * reference the caller keeps for the process's life, or NULL with an exception. */
PyObject *kx_add_type(PyObject *m, PyType_Spec *spec, const char *name);

/* Per-file registration (each adds its types/functions to the module). */
int kx_device_register(PyObject *m);
int kx_queue_register(PyObject *m);
int kx_memory_register(PyObject *m);
int kx_event_register(PyObject *m);
int kx_launch_register(PyObject *m);
int kx_dlpack_register(PyObject *m);
int kx_module_register(PyObject *m); /* rt_module.c: native binaries */

/* --- queues (rt_queue.c) --- */
extern PyObject *kx_queue_type;
kr_queue_t *kx_queue_handle(PyObject *q);         /* NULL + TypeError if not a queue */
int kx_queue_track(PyObject *q, PyObject *event); /* keeps an async launch's event alive */

/* --- events (rt_event.c) --- */
extern PyObject *kx_event_type;
/* Wraps ev (taking its reference); keep is held until the event is known complete. */
PyObject *kx_event_new(kr_event_t *ev, PyObject *keep);
/* Makes wait() check a kernel's assert status buffer (launch.c's kx_status_check) once the
 * launch completes, then free it. Takes ownership of status; holds compiled. */
void kx_event_attach_status(PyObject *event, void *status, PyObject *compiled, int ndim);
/* Raises (returns -1) when the status buffer of a completed launch of compiled records a failed
 * assert or raise; 0 otherwise. */
int kx_status_check(PyObject *compiled, const void *status, int ndim);
kr_event_t *kx_event_handle(PyObject *e); /* NULL + TypeError if not an event */
int kx_event_done(PyObject *e);           /* 1 complete (keep dropped), 0 pending */

/* --- launches (launch.c) --- */
int kx_is_launcher(PyObject *o);
/* One launch: deps is a tuple of events (asynchronous, returns an Event) or None
 * (synchronous, returns None). */
PyObject *kx_launch(PyObject *launcher, PyObject *space, PyObject *args, PyObject *deps);

/* --- call_kernel (call.c) --- */
/* kapi.call_kernel's path: the kernel's Launcher, then kx_launch; deps as kx_launch takes it.
 * RuntimeError until kapi/_kernel/launch.py has configured it (importing it does). */
PyObject *kx_call(PyObject *kernel, PyObject *space, PyObject *deps, PyObject *const *argv,
                  Py_ssize_t n);
int kx_call_register(PyObject *m);
int kx_capi_register(PyObject *m); /* capi.c: the C API capsule (kapi/include/kapi/capi.h) */

/* --- signals around launches (signals.c) --- */
void kx_signals_install(void);         /* once per process; later calls return at once */
void kx_signals_launch_begin(int cpu); /* a launch starts (cpu: on a CPU device) */
void kx_signals_launch_end(int cpu);   /* and ends */

/* --- devices (rt_device.c) --- */
kr_device_t *kx_device(long index); /* NULL + exception when out of range */

#endif /* KAPI_EXT_KX_H */
