/* kapi extension: turning runtime errors into Python exceptions. The classes live in
 * kapi/_errors.py (the one place mapping statuses to exceptions); this file only calls its
 * from_status(name, message) and raises what it returns.
 */
#include "kx.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static PyObject *errors_module(void) {
  static PyObject *mod; /* kept for the process's life, as imported modules are */
  if (!mod) mod = PyImport_ImportModule("kapi._errors");
  return mod;
}

static PyObject *raise_built(PyObject *exc) {
  if (!exc) return NULL;
  PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
  Py_DECREF(exc);
  return NULL;
}

static PyObject *raise_status(const char *status, const char *message) {
  PyObject *mod = errors_module();
  if (!mod) return NULL;
  PyObject *exc = PyObject_CallMethod(mod, "from_status", "ss", status, message);
  return raise_built(exc);
}

PyObject *kx_raise(const kr_error_t *err) {
  char buf[KR_ERROR_MESSAGE_SIZE + 128];
  if (err->ze_result != 0 && !strstr(err->message, "ZE_RESULT"))
    snprintf(buf, sizeof buf, "%s (%s)", err->message, kr_result_name(err->ze_result));
  else
    snprintf(buf, sizeof buf, "%s", err->message[0] ? err->message : kr_status_name(err->status));
  return raise_status(kr_status_name(err->status), buf);
}

PyObject *kx_raise_msg(const char *status, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return raise_status(status, buf);
}

PyObject *kx_raise_class(const char *cls, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  PyObject *mod = errors_module();
  if (!mod) return NULL;
  PyObject *type = PyObject_GetAttrString(mod, cls);
  if (!type) return NULL;
  PyObject *exc = PyObject_CallFunction(type, "s", buf);
  Py_DECREF(type);
  return raise_built(exc);
}
