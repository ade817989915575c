/* The one place where native statuses become Python exceptions. CompileError carries the
 * compiler's status name in .status and its "file:line: error: ..." message as str(e). */
#include "ext.h"

static PyObject *compile_error; /* the class; a strong reference held by the module too */

int kapi_ext_add_errors(PyObject *module) {
  compile_error = PyErr_NewExceptionWithDoc(
      "_kapi.CompileError",
      "A kernel failed to compile. .status names the compiler status (e.g. 'KC_ERR_KIR').",
      PyExc_Exception, NULL);
  if (!compile_error) return -1;
  Py_INCREF(compile_error);
  if (PyModule_AddObject(module, "CompileError", compile_error) < 0) {
    Py_DECREF(compile_error);
    return -1;
  }
  return 0;
}

PyObject *kapi_ext_raise_compile_error(kc_status_t st, const char *msg) {
  PyObject *exc = PyObject_CallFunction(compile_error, "s", msg ? msg : kc_status_name(st));
  if (!exc) return NULL;
  PyObject *status = PyUnicode_FromString(kc_status_name(st));
  if (!status || PyObject_SetAttrString(exc, "status", status) < 0) {
    Py_XDECREF(status);
    Py_DECREF(exc);
    return NULL;
  }
  Py_DECREF(status);
  PyErr_SetObject(compile_error, exc);
  Py_DECREF(exc);
  return NULL;
}
