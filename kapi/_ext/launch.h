/* kapi extension, launch path: the private contract between launch.c (the Launcher: queues,
 * index spaces, dispatch, packing) and launch_args.c (one Python argument -> kx_arg). Only those
 * two files include it; the rest of the extension reaches the launcher through kx.h.
 */
#ifndef KAPI_EXT_LAUNCH_H
#define KAPI_EXT_LAUNCH_H

#include "kx.h"

#include <stdint.h>

/* The most dimensions of a kernel's array argument (the compiler's KIR_MAX_NDIM). */
#define KX_MAX_NDIM 8

/* One argument after classification. */
typedef struct {
  char kind; /* 'A' global array, 'L' local accessor, 'S' scalar */
  PyObject *typekey;
  long device;     /* 'A': runtime device index, -1 for plain host memory */
  PyObject *queue; /* 'A': the array's queue (borrowed from desc) or NULL */
  uint64_t ptr;
  int ndim;
  int64_t shape[KX_MAX_NDIM], strides[KX_MAX_NDIM];
  size_t nbytes;     /* 'L': bytes of local memory; 'S': value size */
  uint64_t value;    /* 'S': the value's bytes */
  uint64_t value_hi; /* 'S': bytes 8..15 of a complex128 scalar */
  /* complex 'A' (docs/kir.md, "Kernel ABI"): the imaginary parts' pointer and the strides in
   * parts, filled by pack() */
  uint64_t ptr_im;
  int64_t part_strides[KX_MAX_NDIM];
} kx_arg;

/* A slot of an exact kapi type read through its member descriptor's getter: the same result as
 * PyObject_GetAttr, without the type's attribute lookup on every launch. */
typedef struct {
  PyObject *descr;
  descrgetfunc get;
} kx_slot;

/* Inline: both files read slots on every launch, where a call across files would cost. */
static inline PyObject *kx_slot_read(const kx_slot *s, PyObject *obj) {
  return s->get(s->descr, obj, (PyObject *)Py_TYPE(obj));
}

/* Fills out (dropping what it held) with the getter of type's slot `name`, or leaves out->get
 * NULL when name is not a data descriptor of type (callers then use PyObject_GetAttr). 0, or -1
 * with an exception. */
int kx_slot_lookup(PyObject *type, PyObject *name, kx_slot *out);

/* --- launch_args.c --- */

/* Adds ArgDesc and rt_launch_numpy to the module. 0, or -1 with an exception. */
int kx_args_register(PyObject *m);

/* rt_launch_configure's argument half: kapi's Array type and kapi._launch._arg_desc (the
 * fallback for arguments without a fast path). Holds references to both. 0, or -1. */
int kx_args_configure(PyObject *array_type, PyObject *arg_desc);

/* Fills a from argument pos. Returns a new reference to the descriptor a's fields are borrowed
 * from, to drop after the launch (Py_None when they live in the argument itself or in module
 * state); NULL with an exception. */
PyObject *kx_classify(PyObject *arg, Py_ssize_t pos, kx_arg *a);

#endif /* KAPI_EXT_LAUNCH_H */
