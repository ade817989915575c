/* Preloaded before the math test (host_math_shadowed): defines a few libm names with wrong
 * results, as another library in a process may (the GPU machine's host had one for erf and
 * acosh). A kernel must still bind libm's functions: neither fail to build ("Symbols not
 * found") nor call these. */
#define KAPI_SHADOW __attribute__((visibility("default")))
KAPI_SHADOW double erf(double x) {
  return x * 0.0 - 42.0;
}
KAPI_SHADOW float erff(float x) {
  return x * 0.0f - 42.0f;
}
KAPI_SHADOW double erfc(double x) {
  return x * 0.0 - 42.0;
}
KAPI_SHADOW float erfcf(float x) {
  return x * 0.0f - 42.0f;
}
KAPI_SHADOW double acosh(double x) {
  return x * 0.0 - 42.0;
}
KAPI_SHADOW float acoshf(float x) {
  return x * 0.0f - 42.0f;
}
KAPI_SHADOW double tanh(double x) {
  return x * 0.0 - 42.0;
}
KAPI_SHADOW float tanhf(float x) {
  return x * 0.0f - 42.0f;
}
