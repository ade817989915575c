/* kapi extension: fork safety (see fork.h). A fork waits until no thread runs native kapi work
 * (the other threads of the parent hold none of the compiler's, runtime's or drivers' locks
 * then), and new native work waits until the fork is done. In the child, devices whose driver
 * cannot survive fork (anything but kapi's CPU driver, whose pool restarts itself: see
 * runtime/drivers/cpu/cpu_device.c) raise a clear error on first use instead of hanging.
 */
#include "fork.h"

#include "kx.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int inside;             /* threads in native work */
static int forking;            /* a fork is being prepared: native work waits */
static atomic_int started;     /* the runtime was started in this process or its parent */
static atomic_int forked_from; /* pid of the parent, in a child forked after kapi started */

void kx_fork_note_started(void) {
  atomic_store_explicit(&started, 1, memory_order_relaxed);
}

PyThreadState *kx_gil_release(void) {
  PyThreadState *ts = PyEval_SaveThread();
  pthread_mutex_lock(&gate);
  while (forking)
    pthread_cond_wait(&gate_cv, &gate);
  inside++;
  pthread_mutex_unlock(&gate);
  return ts;
}

void kx_gil_restore(PyThreadState *ts) {
  pthread_mutex_lock(&gate);
  if (--inside == 0 && forking) pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate);
  PyEval_RestoreThread(ts);
}

/* The forking thread: waits until no other thread is in native work. Threads leaving it never
 * need the GIL the forking thread holds, so this always ends. */
static void before_fork(void) {
  pthread_mutex_lock(&gate);
  forking = 1;
  while (inside > 0)
    pthread_cond_wait(&gate_cv, &gate);
}

static void after_fork_parent(void) {
  forking = 0;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate);
}

/* The child has only the forking thread: the gate's waiters are gone with their threads. */
static void after_fork_child(void) {
  pthread_mutex_init(&gate, NULL);
  pthread_cond_init(&gate_cv, NULL);
  forking = 0;
  inside = 0;
  if (atomic_load(&started)) atomic_store(&forked_from, (int)getppid());
}

int kx_fork_register(PyObject *module) {
  (void)module;
  static int done;
  if (done++) return 0;
  if (pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0) {
    PyErr_SetString(PyExc_OSError, "kapi: pthread_atfork failed");
    return -1;
  }
  return 0;
}

int kx_fork_check(long device) {
  int parent = atomic_load_explicit(&forked_from, memory_order_relaxed);
  if (!parent || device < 0) return 0;
  kr_device_t *dev = kr_device_get((uint32_t)device);
  const kr_device_info_t *info = dev ? kr_device_info(dev) : NULL;
  if (info && strcmp(info->driver_name, "kapi-cpu") == 0) return 0;
  kx_raise_class("KapiError",
                 "this process was forked (from pid %d) after kapi had started device '%s' "
                 "(driver %s), whose state does not survive fork; use multiprocessing's 'spawn' "
                 "or 'forkserver' start method (multiprocessing.get_context('spawn')), or start "
                 "using kapi only in the child processes",
                 parent, info ? info->name : "?", info ? info->driver_name : "?");
  return -1;
}
