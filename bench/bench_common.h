/* Helpers shared by the C benchmarks: a monotonic clock, medians, and the SPIR-V a benchmark
 * runs, from kapi's compiler (kc_compile of KIR text, looked up at run time so the benchmark
 * builds before the compiler is complete) or else from the OpenCL C fixture module. */
#ifndef KAPI_BENCH_COMMON_H
#define KAPI_BENCH_COMMON_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif

#include "kapi/runtime.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static inline double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* SPIR-V of a KIR module through kc_compile, or NULL (compiler missing or failing; the reason
 * goes to *why). The caller frees the bytes with free(). */
/* The compiler library, wherever the build was carried: $KAPI_LIB_DIR, else beside the runtime
 * library this process loaded (kapi/_lib holds both), else the build directory's path, else
 * the loader's search (LD_LIBRARY_PATH). */
static inline void *open_compiler(char *why, size_t why_n) {
  char path[4096];
  const char *env = getenv("KAPI_LIB_DIR");
  if (env && *env) {
    snprintf(path, sizeof path, "%s/libkapi_compiler.so", env);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib;
  }
  Dl_info info;
  if (dladdr((void *)kr_init, &info) && info.dli_fname && strrchr(info.dli_fname, '/')) {
    snprintf(path, sizeof path, "%.*s/libkapi_compiler.so",
             (int)(strrchr(info.dli_fname, '/') - info.dli_fname), info.dli_fname);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib;
  }
  void *lib = dlopen(KAPI_LIB_DIR "/libkapi_compiler.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libkapi_compiler.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) snprintf(why, why_n, "no compiler library: %s", dlerror());
  return lib;
}

static inline void *spirv_from_kir(const char *kir, size_t *n, char *why, size_t why_n) {
  void *lib = open_compiler(why, why_n);
  if (!lib) return NULL;
  typedef int (*compile_fn)(const char *, size_t, const void *, void **, char **);
  typedef const void *(*spirv_fn)(const void *, size_t *);
  typedef void (*destroy_fn)(void *);
  compile_fn compile = (compile_fn)dlsym(lib, "kc_compile");
  spirv_fn spirv = (spirv_fn)dlsym(lib, "kc_program_spirv");
  destroy_fn destroy = (destroy_fn)dlsym(lib, "kc_program_destroy");
  destroy_fn kc_free = (destroy_fn)dlsym(lib, "kc_free");
  if (!compile || !spirv || !destroy || !kc_free) {
    snprintf(why, why_n, "the compiler library has no kc_compile yet");
    return NULL;
  }
  void *prog = NULL;
  char *msg = NULL;
  if (compile(kir, strlen(kir), NULL, &prog, &msg)) {
    snprintf(why, why_n, "kc_compile failed: %s", msg ? msg : "?");
    kc_free(msg);
    return NULL;
  }
  const void *bytes = spirv(prog, n);
  void *copy = malloc(*n);
  memcpy(copy, bytes, *n);
  destroy(prog);
  return copy; /* the compiler library stays loaded: cheap, and safe for the process */
}

static inline void *spirv_from_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(*n);
  if (p && fread(p, 1, *n, f) != *n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  return p;
}

/* The first device of the driver named by KAPI_BENCH_DRIVER (default kapi-cpu, the CPU
 * driver; kapi-cuda for the GPU), or NULL with a message on stderr. */
static inline kr_device_t *bench_device(void) {
  const char *want = getenv("KAPI_BENCH_DRIVER") ? getenv("KAPI_BENCH_DRIVER") : "kapi-cpu";
  kr_error_t err;
  if (kr_init(&err)) {
    fprintf(stderr, "kr_init: %s\n", err.message);
    return NULL;
  }
  for (uint32_t i = 0; i < kr_device_count(); i++)
    if (!strcmp(kr_device_info(kr_device_get(i))->driver_name, want)) return kr_device_get(i);
  fprintf(stderr, "no %s device (drivers: %s)\n", want, kr_driver_list());
  return NULL;
}

#endif /* KAPI_BENCH_COMMON_H */
