/* kapi extension: fork safety. Every stretch of native work that runs without the GIL goes
 * through kx_gil_release / kx_gil_restore, so a fork can wait until no thread is inside the
 * compiler or the runtime: the child then inherits no lock held by a thread it does not have.
 */
#ifndef KAPI_EXT_FORK_H
#define KAPI_EXT_FORK_H

#include <Python.h>

/* PyEval_SaveThread, then entry into native work (waits while a fork is being prepared). */
PyThreadState *kx_gil_release(void);

/* Leaves native work, then PyEval_RestoreThread(ts). */
void kx_gil_restore(PyThreadState *ts);

/* Installs the fork handlers (once per process). 0, or -1 with an exception. */
int kx_fork_register(PyObject *module);

/* Notes that the runtime (drivers, devices) has been started in this process: a child forked
 * after that cannot use devices whose driver does not survive fork. */
void kx_fork_note_started(void);

/* 0 when the runtime device `device` may be used in this process; otherwise -1 with
 * kapi.KapiError: the process is a fork child of one that had started the device's driver, and
 * only kapi's CPU driver survives fork. One load and a branch outside fork children. */
int kx_fork_check(long device);

#endif /* KAPI_EXT_FORK_H */
