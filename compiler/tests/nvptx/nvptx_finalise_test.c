/* Unit tests of the NVPTX finaliser's contract: malformed SPIR-V is an error (never an abort),
 * kernel tables describe how the driver passes arguments, and the PTX uses the address spaces
 * and instructions the kernels need. Usage: nvptx_finalise_test FIXTURE_DIR [LIBDEVICE]
 * Exits 77 (skip) only when everything else passed and libdevice is missing.
 */
#include "kapi/compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

static const char *fixture_dir;

static void *load(const char *name, size_t *n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.spv", fixture_dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc((size_t)len);
  *n = fread(buf, 1, (size_t)len, f);
  fclose(f);
  return buf;
}

static kc_nvptx_module_t *finalise(const char *name, const char *libdevice, kc_status_t want,
                                   const char *log_has) {
  size_t n;
  void *spv = load(name, &n);
  kc_nvptx_options_t o;
  kc_nvptx_options_init(&o);
  o.libdevice_path = libdevice;
  kc_nvptx_module_t *m = NULL;
  char *log = NULL;
  kc_status_t st = kc_nvptx_finalise(spv, n, &o, &m, &log);
  CHECK(st == want, "%s: status %d, want %d (%s)", name, st, want, log ? log : "");
  if (log_has) CHECK(log && strstr(log, log_has), "%s: log '%s' lacks '%s'", name, log, log_has);
  if (st != KC_OK)
    CHECK(m == NULL && log && *log, "%s: failure without log or with a module", name);
  free(log);
  free(spv);
  return m;
}

static void expect_ptx(const kc_nvptx_module_t *m, const char *what, int present) {
  const char *ptx = kc_nvptx_module_ptx(m, NULL);
  CHECK((strstr(ptx, what) != NULL) == present, "PTX %s '%s'", present ? "lacks" : "has", what);
}

static void expect_args(const kc_nvptx_module_t *m, const char *kernel, const char *sig) {
  const kc_nvptx_kernel_t *k = kc_nvptx_module_find(m, kernel);
  CHECK(k != NULL, "no kernel %s", kernel);
  if (!k) return;
  char got[256] = "";
  for (uint32_t i = 0; i < k->num_args; ++i) {
    char one[32];
    snprintf(one, sizeof one, "%s%s%u", i ? " " : "", k->args[i].kind == KC_ARG_LOCAL ? "L" : "v",
             k->args[i].size);
    strcat(got, one);
  }
  CHECK(strcmp(got, sig) == 0, "kernel %s args '%s', want '%s'", kernel, got, sig);
}

static void test_malformed(void) {
  size_t n;
  unsigned char *spv = load("saxpy", &n);
  kc_nvptx_module_t *m = NULL;
  char *log = NULL;
  CHECK(kc_nvptx_finalise(NULL, 4, NULL, &m, &log) == KC_ERR_INVALID_ARGUMENT, "NULL input");
  free(log);
  const char junk[] = "this is not SPIR-V at all, just text.";
  size_t cuts[] = {0, 3, 20, n / 2, n - 4};
  CHECK(kc_nvptx_finalise(junk, 36, NULL, &m, &log) == KC_ERR_SPIRV && log, "junk: %s", log);
  free(log);
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; ++i) {
    log = NULL;
    kc_status_t st = kc_nvptx_finalise(spv, cuts[i], NULL, &m, &log);
    CHECK(st == KC_ERR_SPIRV && log, "truncated to %zu: status %d", cuts[i], st);
    free(log);
  }
  free(spv);
}

/* Every stride-th byte of a fixture's body changed in turn, two ways: the finaliser must return (an
 * error with a log, or a module), never abort. This found translator assertions (string
 * padding, parameter attributes, names of earlier ids) and NVPTX fatal errors (odd symbol
 * names, unmapped storage classes) that SPIRV-Tools lets through. */
static void test_corruption(const char *name, size_t stride) {
  size_t n;
  unsigned char *spv = load(name, &n);
  unsigned char *bad = malloc(n);
  int ok = 0, failed = 0;
  for (size_t i = 20; i < n; i += stride)
    for (int v = 0; v < 2; ++v) {
      memcpy(bad, spv, n);
      bad[i] ^= v ? 0x5a : 0x01;
      kc_nvptx_module_t *m = NULL;
      char *log = NULL;
      kc_status_t st = kc_nvptx_finalise(bad, n, NULL, &m, &log);
      CHECK(st == KC_OK || (log && *log && !m), "%s byte %zu: status %d without log", name, i, st);
      st == KC_OK ? ok++ : failed++;
      kc_nvptx_module_destroy(m);
      free(log);
    }
  printf("%s corrupted: %d finalised, %d refused, none aborted\n", name, ok, failed);
  free(bad);
  free(spv);
}

/* An access chain whose index is a float validates with this SPIRV-Tools, and LLVM then
 * traps on the GEP the translator builds: both finalisers must refuse it. local_rows converts
 * a value to float (OpConvertUToF) just before indexing its local row with an access chain. */
static void test_float_index(void) {
  size_t n;
  uint32_t *w = load("local_rows", &n);
  uint32_t fval = 0, patched = 0;
  for (size_t i = 5; i < n / 4 && !patched;) {
    uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
    if (!count) break;
    if (op == 112 && count == 4) fval = w[i + 2]; /* OpConvertUToF result */
    if ((op == 67 || op == 70) && fval && count > 4) w[i + count - 1] = fval, patched = 1;
    i += count;
  }
  CHECK(patched, "local_rows: no access chain after a float conversion to corrupt");
  kc_nvptx_module_t *m = NULL;
  char *log = NULL;
  kc_status_t st = kc_nvptx_finalise(w, n, NULL, &m, &log);
  CHECK(st == KC_ERR_SPIRV && log && strstr(log, "access chain"), "float index (NVPTX): %d %s", st,
        log ? log : "");
  free(log);
  log = NULL;
  kc_host_module_t *h = NULL;
  st = kc_host_finalise(w, n, &h, &log);
  CHECK(st == KC_ERR_SPIRV && log && strstr(log, "access chain"), "float index (host): %d %s", st,
        log ? log : "");
  kc_host_module_destroy(h);
  free(log);
  free(w);
}

static void test_saxpy(void) {
  kc_nvptx_module_t *m = finalise("saxpy", NULL, KC_OK, NULL);
  if (!m) return;
  CHECK(kc_nvptx_module_kernel_count(m) == 1, "saxpy: one kernel");
  expect_args(m, "saxpy", "v8 v8 v4 v4");
  expect_ptx(m, ".version 7.5", 1);
  expect_ptx(m, ".target sm_86", 1);
  expect_ptx(m, ".entry saxpy", 1);
  expect_ptx(m, "ld.global.nc.f32", 1); /* restrict + const: read-only cache path */
  expect_ptx(m, "mul.wide.u32", 1);     /* 32-bit id math widened once */
  expect_ptx(m, "ld.f32", 0);           /* no generic-pointer loads */
  expect_ptx(m, "cvta", 0);
  CHECK(kc_nvptx_module_find(m, "nope") == NULL, "find unknown kernel");
  kc_nvptx_module_destroy(m);
}

static void test_reduce(void) {
  kc_nvptx_module_t *m = finalise("reduce", NULL, KC_OK, NULL);
  if (!m) return;
  CHECK(kc_nvptx_module_kernel_count(m) == 3, "reduce: three kernels");
  expect_args(m, "reduce_arg", "v8 v8 L0");
  expect_args(m, "reduce_fixed", "v8 v8");
  expect_ptx(m, "bar.sync", 1);
  expect_ptx(m, ".extern .shared .align 16 .b8 __kapi_dynamic_local[]", 1);
  expect_ptx(m, ".shared .align 4 .b8 reduce_fixed", 1);
  expect_ptx(m, "ld.shared.f32", 1);
  expect_ptx(m, "%ctaid.y", 1);
  kc_nvptx_module_destroy(m);
}

/* Local-memory argument offsets are 16-byte aligned (the driver's layout), so rows of 16
 * floats are accessed as v4 in shared memory. */
static void test_local_rows(void) {
  kc_nvptx_module_t *m = finalise("local_rows", NULL, KC_OK, NULL);
  if (!m) return;
  expect_args(m, "local_rows", "v8 L0");
  expect_ptx(m, "ld.shared.v4.f32", 1);
  expect_ptx(m, "st.shared.v4.f32", 1);
  kc_nvptx_module_destroy(m);
}

static void test_atomics(void) {
  kc_nvptx_module_t *m = finalise("atomics", NULL, KC_OK, NULL);
  if (!m) return;
  expect_args(m, "fadd", "v8 v8 v8 v8");
  expect_ptx(m, "atom.global.add.u32", 1);
  expect_ptx(m, "atom.global.max.u32", 1);
  expect_ptx(m, "atom.global.add.u64", 1);
  expect_ptx(m, "atom.global.add.f32", 1);
  expect_ptx(m, "atom.global.add.f64", 1);
  expect_ptx(m, "atom.global.cas.b32", 1); /* float min/max and the lock */
  expect_ptx(m, "membar.gl", 1);           /* acquire/release of the lock */
  kc_nvptx_module_destroy(m);
}

static void expect_coarse(const kc_nvptx_module_t *m, const char *kernel, uint32_t factor,
                          uint64_t aligned) {
  const kc_nvptx_kernel_t *k = kc_nvptx_module_find(m, kernel);
  CHECK(k != NULL, "no kernel %s", kernel);
  if (!k) return;
  CHECK(k->coarse_factor == factor, "%s: coarse factor %u, want %u", kernel, k->coarse_factor,
        factor);
  CHECK((k->coarse_name != NULL) == (factor != 0), "%s: coarse entry %s", kernel,
        k->coarse_name ? k->coarse_name : "(none)");
  CHECK(k->coarse_aligned == aligned, "%s: aligned mask %llx, want %llx", kernel,
        (unsigned long long)k->coarse_aligned, (unsigned long long)aligned);
  if (!k->coarse_name) return;
  char entry[160];
  snprintf(entry, sizeof entry, ".entry %s(", k->coarse_name);
  expect_ptx(m, entry, 1);
  CHECK(kc_nvptx_module_find(m, k->coarse_name) == NULL, "%s is not a kernel of its own",
        k->coarse_name);
}

/* Coarsened entries: 16-byte vector accesses, only for kernels whose work-items never meet,
 * and none when the options turn coarsening off. */
static void test_coarse(void) {
  kc_nvptx_module_t *m = finalise("coarse", NULL, KC_OK, NULL);
  if (!m) return;
  CHECK(kc_nvptx_module_kernel_count(m) == 5, "coarse: five kernels (entries not listed)");
  expect_coarse(m, "stream_f32", 4, 0x3);
  expect_coarse(m, "stream_f64", 2, 0x3);
  expect_coarse(m, "mixed", 4, 0x3);
  expect_coarse(m, "with_local_id", 0, 0);
  expect_coarse(m, "guarded", 0, 0);
  expect_ptx(m, "ld.global.v4.f32", 1);
  expect_ptx(m, "st.global.v4.f32", 1);
  expect_ptx(m, "ld.global.v2.f64", 1);
  expect_ptx(m, "st.global.v2.f64", 1);
  kc_nvptx_module_destroy(m);
  m = finalise("saxpy", NULL, KC_OK, NULL); /* its bounds check keeps accesses scalar */
  if (m) expect_coarse(m, "saxpy", 0, 0);
  kc_nvptx_module_destroy(m);
  m = finalise("reduce", NULL, KC_OK, NULL);
  if (m) expect_coarse(m, "ids2d", 0, 0); /* local ids */
  kc_nvptx_module_destroy(m);

  size_t n;
  void *spv = load("coarse", &n);
  kc_nvptx_options_t o;
  kc_nvptx_options_init(&o);
  o.coarsen = 0;
  char *log = NULL;
  m = NULL;
  CHECK(kc_nvptx_finalise(spv, n, &o, &m, &log) == KC_OK, "coarse without coarsening: %s", log);
  if (m) {
    expect_coarse(m, "stream_f32", 0, 0);
    expect_ptx(m, "__kapi_coarse", 0);
  }
  kc_nvptx_module_destroy(m);
  free(log);
  free(spv);
}

static int test_math(const char *libdevice) {
  finalise("math", NULL, KC_ERR_UNSUPPORTED, "libdevice");
  finalise("math", "/nonexistent/libdevice.10.bc", KC_ERR_TARGET, "libdevice");
  FILE *f = libdevice ? fopen(libdevice, "rb") : NULL;
  if (!f) {
    printf("SKIP part: libdevice not found at '%s'\n", libdevice ? libdevice : "(none)");
    return 0;
  }
  fclose(f);
  kc_nvptx_module_t *m = finalise("math", libdevice, KC_OK, NULL);
  if (!m) return 1;
  expect_ptx(m, ".extern", 0); /* all of libdevice resolved and inlined */
  expect_ptx(m, "__nv_", 0);
  expect_ptx(m, "sqrt.rn.f32", 1);
  expect_ptx(m, "sqrt.rn.f64", 1);
  kc_nvptx_module_destroy(m);
  return 1;
}

static void test_unsupported(void) {
  finalise("unsupported", NULL, KC_ERR_UNSUPPORTED, "__spirv_BuiltInWorkDim");
}

/* Native binaries: kc_nvptx_load gives back the same kernel table and PTX; truncated, damaged
 * and other-option binaries are refused with a log. */
static void expect_load(const void *bin, size_t len, const kc_nvptx_options_t *o,
                        kc_status_t want) {
  kc_nvptx_module_t *m = NULL;
  char *log = NULL;
  kc_status_t st = kc_nvptx_load(bin, len, o, &m, &log);
  CHECK(st == want, "kc_nvptx_load of %zu bytes: status %d, want %d (%s)", len, st, want,
        log ? log : "");
  if (st != KC_OK) CHECK(!m && log && *log, "a refusal has a log and no module");
  kc_nvptx_module_destroy(m);
  free(log);
}

static void test_native(void) {
  kc_nvptx_module_t *m = finalise("coarse", NULL, KC_OK, NULL);
  if (!m) return;
  size_t len = 0;
  void *bin = kc_nvptx_module_native(m, &len);
  CHECK(bin && len > 64, "no native binary");
  kc_nvptx_options_t o;
  kc_nvptx_options_init(&o);
  kc_nvptx_module_t *l = NULL;
  char *log = NULL;
  CHECK(kc_nvptx_load(bin, len, &o, &l, &log) == KC_OK, "load: %s", log ? log : "");
  free(log);
  if (l) {
    size_t a, b;
    const char *pa = kc_nvptx_module_ptx(m, &a), *pb = kc_nvptx_module_ptx(l, &b);
    CHECK(a == b && !memcmp(pa, pb, a) && pb[b] == 0, "the same PTX");
    CHECK(kc_nvptx_module_kernel_count(l) == kc_nvptx_module_kernel_count(m), "kernel count");
    for (uint32_t i = 0; i < kc_nvptx_module_kernel_count(m); i++) {
      const kc_nvptx_kernel_t *x = kc_nvptx_module_kernel(m, i), *y = kc_nvptx_module_kernel(l, i);
      CHECK(!strcmp(x->name, y->name) && x->num_args == y->num_args &&
                !memcmp(x->args, y->args, x->num_args * sizeof *x->args) &&
                !memcmp(x->required_local_size, y->required_local_size, 12) &&
                (x->coarse_name ? y->coarse_name && !strcmp(x->coarse_name, y->coarse_name)
                                : !y->coarse_name) &&
                x->coarse_factor == y->coarse_factor && x->coarse_aligned == y->coarse_aligned &&
                (x->aligned_name ? y->aligned_name && !strcmp(x->aligned_name, y->aligned_name)
                                 : !y->aligned_name) &&
                x->aligned_mask == y->aligned_mask,
            "kernel %s differs after loading", x->name);
    }
    size_t len2 = 0;
    void *bin2 = kc_nvptx_module_native(l, &len2);
    CHECK(len2 == len && !memcmp(bin, bin2, len), "a loaded module gives its binary back");
    kc_free(bin2);
  }
  kc_nvptx_module_destroy(l);
  for (size_t cut = 0; cut < len; cut += cut < 300 ? 1 : 211)
    expect_load(bin, cut, &o, KC_ERR_INVALID_ARGUMENT);
  uint8_t *bad = malloc(len);
  memcpy(bad, bin, len);
  bad[3] ^= 1;
  expect_load(bad, len, &o, KC_ERR_INVALID_ARGUMENT);
  free(bad);
  o.sm = 80; /* made for the default sm_86 */
  expect_load(bin, len, &o, KC_ERR_INVALID_ARGUMENT);
  kc_nvptx_options_init(&o);
  o.coarsen = 0;
  expect_load(bin, len, &o, KC_ERR_INVALID_ARGUMENT);
  expect_load(NULL, 0, NULL, KC_ERR_INVALID_ARGUMENT);
  kc_free(bin);
  kc_nvptx_module_destroy(m);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FIXTURE_DIR [LIBDEVICE]\n", argv[0]);
    return 2;
  }
  fixture_dir = argv[1];
  test_malformed();
  test_corruption("saxpy", 1);
  test_corruption("reduce", 7);
  test_float_index();
  test_saxpy();
  test_reduce();
  test_local_rows();
  test_atomics();
  test_coarse();
  test_unsupported();
  test_native();
  int had_libdevice = test_math(argc > 2 ? argv[2] : NULL);
  if (failures) {
    fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  printf("all NVPTX finaliser checks passed%s\n", had_libdevice ? "" : " except libdevice math");
  return had_libdevice ? 0 : 77;
}
