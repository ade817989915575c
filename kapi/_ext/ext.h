/* Private to the _kapi extension: how its files plug into the module. Each file that binds a
 * part of kapi's native layers adds its functions with one kapi_ext_add_* call from module.c,
 * and raises errors through the one place that maps statuses to exception classes (errors.c).
 */
#ifndef KAPI_EXT_H
#define KAPI_EXT_H

#include <Python.h>

#include "kapi/compiler.h"

/* Each returns 0, or -1 with a Python exception set. */
int kapi_ext_add_errors(PyObject *module);  /* errors.c: exception classes */
int kapi_ext_add_compile(PyObject *module); /* compile.c: compile_kir, spirv_validate, ... */
/* The runtime half (devices, queues, memory, launches) registers through kx.h. */

/* Raises CompileError(message) with .status = kc_status_name(st); returns NULL. msg may be NULL
 * (the status name is used); it is not freed here. */
PyObject *kapi_ext_raise_compile_error(kc_status_t st, const char *msg);

#endif
