/* The _kapi module: creates it and lets each binding file register its functions and types
 * (see ext.h). Adding a binding file means one line here. */
#include "ext.h"
#include "kx.h"

PyObject *kx_add_type(PyObject *m, PyType_Spec *spec, const char *name) {
  PyObject *t = PyType_FromSpec(spec);
  if (!t) return NULL;
  Py_INCREF(t); /* one reference for the caller, one the module takes */
  if (PyModule_AddObject(m, name, t) < 0) {
    Py_DECREF(t);
    Py_DECREF(t);
    return NULL;
  }
  return t;
}

static struct PyModuleDef kapi_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_kapi",
    .m_doc = "kapi's native layer: the KIR -> SPIR-V compiler and the Level Zero runtime.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__kapi(void) {
  PyObject *m = PyModule_Create(&kapi_module);
  if (!m) return NULL;
  if (kapi_ext_add_errors(m) || kapi_ext_add_compile(m) || kx_runtime_register(m)) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
