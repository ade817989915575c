/* The forward half of compiler.h as a contract: argument checks, ownership, accessors,
 * kc_kir_check, SPIR-V validation and disassembly of good and bad input, robustness against
 * mutated KIR (every mutation ends in a status, never a crash), and the compile time of saxpy. */
#include "kapi/compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);                     \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

static const char saxpy[] =
    "kir 1\n"
    "kernel @saxpy(%a: f32, %x: array(f32,1,C,global), %y: array(f32,1,C,global)) -> void "
    "file \"/home/u/saxpy.py\" line 7 {\n"
    "  var $i i64\n"
    "^entry:\n"
    "  %0 = global_id i64 0        #9\n"
    "  store_var $i %0             #9\n"
    "  %1 = load_var i64 $i        #10\n"
    "  %2 = aload f32 %x %1        #10\n"
    "  %3 = mul f32 %a %2          #10\n"
    "  %4 = aload f32 %y %1        #10\n"
    "  %5 = add f32 %3 %4          #10\n"
    "  astore %y %5 %1             #10\n"
    "  ret                         #10\n"
    "}\n";

static void test_arguments(void) {
  kc_program_t *prog = (kc_program_t *)1;
  char *err = NULL;
  CHECK(kc_compile(NULL, 0, NULL, &prog, &err) == KC_ERR_INVALID_ARGUMENT);
  CHECK(err && strstr(err, "NULL"));
  kc_free(err);
  CHECK(kc_compile(saxpy, sizeof saxpy - 1, NULL, NULL, NULL) == KC_ERR_INVALID_ARGUMENT);
  kc_options_t o = {.opt_level = 4};
  CHECK(kc_compile(saxpy, sizeof saxpy - 1, &o, &prog, NULL) == KC_ERR_INVALID_ARGUMENT);
  CHECK(prog == NULL);
  CHECK(kc_kir_check(NULL, 0, NULL) == KC_ERR_INVALID_ARGUMENT);
  CHECK(kc_spirv_validate(NULL, 0, NULL) == KC_ERR_INVALID_ARGUMENT);
  CHECK(kc_spirv_disassemble(saxpy, 8, NULL, NULL) == KC_ERR_INVALID_ARGUMENT);
  CHECK(kc_program_entry(NULL) == NULL);
  kc_program_destroy(NULL);
  CHECK(!strcmp(kc_status_name((kc_status_t)99), "KC_ERR_UNKNOWN"));
}

static void test_program(void) {
  kc_program_t *prog = NULL;
  char *err = NULL;
  CHECK(kc_compile(saxpy, sizeof saxpy - 1, NULL, &prog, &err) == KC_OK);
  CHECK(err == NULL);
  if (!prog) return;
  CHECK(!strcmp(kc_program_entry(prog), "saxpy"));
  CHECK(strstr(kc_program_llvm_ir(prog), "define spir_kernel void @saxpy("));
  CHECK(strstr(kc_program_llvm_ir(prog), "float addrspace(1)*"));
  size_t n = 0;
  const unsigned char *spv = kc_program_spirv(prog, &n);
  CHECK(n > 20 && n % 4 == 0 && spv[0] == 0x03 && spv[3] == 0x07);
  CHECK(kc_spirv_validate(spv, n, &err) == KC_OK);
  char *text = NULL;
  CHECK(kc_spirv_disassemble(spv, n, &text, &err) == KC_OK);
  CHECK(text && strstr(text, "OpEntryPoint Kernel") && strstr(text, "\"saxpy\""));
  /* SPIR-V 1.0 (the translator's 1.2 cap yields 1.0 when nothing newer is needed) */
  CHECK(text && strstr(text, "; Version: 1.0"));
  kc_free(text);
  /* a corrupted module fails validation with the validator's message */
  unsigned char *bad = malloc(n);
  memcpy(bad, spv, n);
  memset(bad + n / 2, 0xff, 8);
  CHECK(kc_spirv_validate(bad, n, &err) == KC_ERR_SPIRV);
  CHECK(err && strstr(err, "SPIR-V validation failed"));
  kc_free(err);
  free(bad);
  kc_program_destroy(prog);
}

static void test_kir_check(void) {
  char *err = NULL;
  CHECK(kc_kir_check(saxpy, sizeof saxpy - 1, &err) == KC_OK && err == NULL);
  CHECK(kc_kir_check("kir 1\n", 6, &err) == KC_ERR_KIR);
  CHECK(err && strstr(err, "no kernel"));
  kc_free(err);
  /* the length bounds the text: a truncated module is unclosed */
  CHECK(kc_kir_check(saxpy, sizeof saxpy - 10, &err) == KC_ERR_KIR);
  kc_free(err);
}

/* Deterministic mutations: drop, duplicate or swap a token, or replace one with a word from a
 * small vocabulary. Every result must be a status with a message, never a crash. */
static void test_mutations(void) {
  static const char *const words[] = {
      "f64", "i8",  "bool", "%0",     "%5", "^entry", "#0", "ret", "array(f32,2,F,local)",
      "-1",  "nan", "$i",   "@saxpy", "}"};
  unsigned seed = 12345;
  size_t len = sizeof saxpy - 1;
  char *buf = malloc(len * 2 + 64);
  int ok = 0, rejected = 0;
  for (int iter = 0; iter < 300; iter++) {
    seed = seed * 1103515245u + 12345u;
    size_t at = (seed >> 8) % len, cut = 1 + (seed >> 20) % 6;
    const char *w = words[(seed >> 4) % (sizeof words / sizeof *words)];
    size_t n = 0;
    memcpy(buf, saxpy, at);
    n = at;
    if (iter % 3) n += (size_t)sprintf(buf + n, " %s ", w);
    size_t rest = at + cut < len ? at + cut : len;
    memcpy(buf + n, saxpy + rest, len - rest);
    n += len - rest;
    kc_program_t *prog = NULL;
    char *err = NULL;
    kc_status_t st = kc_compile(buf, n, NULL, &prog, &err);
    if (st == KC_OK) {
      ok++;
    } else {
      rejected++;
      CHECK(err != NULL && strstr(err, "error:"));
      CHECK(st == KC_ERR_KIR);
    }
    kc_program_destroy(prog);
    kc_free(err);
  }
  free(buf);
  CHECK(rejected > 200);
  printf("mutations: %d compiled, %d rejected\n", ok, rejected);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void test_compile_time(void) {
  enum { RUNS = 41 };
  double ms[RUNS];
  for (int i = 0; i < RUNS; i++) {
    struct timespec t0, t1;
    kc_program_t *prog = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(kc_compile(saxpy, sizeof saxpy - 1, NULL, &prog, NULL) == KC_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    kc_program_destroy(prog);
    ms[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  }
  qsort(ms, RUNS, sizeof *ms, cmp_double);
  printf("kc_compile(saxpy): median %.2f ms, min %.2f ms over %d runs\n", ms[RUNS / 2], ms[0],
         RUNS);
  CHECK(ms[RUNS / 2] < 100.0); /* the whole Python -> SPIR-V budget */
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick"); /* under valgrind */
  test_arguments();
  test_program();
  test_kir_check();
  if (!quick) {
    test_mutations();
    test_compile_time();
  }
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
