/* kapi's own pipeline end to end in C: KIR text -> kc_compile -> SPIR-V -> the runtime ->
 * the CPU driver, with arguments packed by the kernel ABI of docs/kir.md (arrays as data
 * pointer, extents, strides; local arrays as a local-memory size and extents), on the driver
 * KAPI_TEST_DRIVER names (kapi-cpu by default, or kapi-cuda). Skips (77) when that driver has
 * not been built or has no device. */
#include "check.h"
#include "kapi/compiler.h"

#include <unistd.h>

static kr_device_t *dev;
static kr_queue_t *q;
static kr_error_t err;

static kr_kernel_t *compile(const char *kir) {
  kc_program_t *prog = NULL;
  char *msg = NULL;
  if (kc_compile(kir, strlen(kir), NULL, &prog, &msg) != KC_OK) {
    fprintf(stderr, "kc_compile: %s\n", msg ? msg : "?");
    exit(1);
  }
  size_t n = 0;
  const void *spv = kc_program_spirv(prog, &n);
  kr_kernel_t *k = kr_kernel_get(dev, spv, n, kc_program_entry(prog), &err);
  if (!k) fprintf(stderr, "kr_kernel_get: %s\n", err.message);
  CHECK(k != NULL);
  kc_program_destroy(prog);
  return k;
}

static const char *triad_kir =
    "kir 1\n"
    "kernel @triad(%a: array(f32,1,C,global), %b: array(f32,1,C,global), "
    "%c: array(f32,1,C,global), %s: f32) -> void file \"test_kir.c\" line 1 {\n"
    "^entry:\n"
    "  %0 = global_id i64 0\n"
    "  %1 = aload f32 %b %0\n"
    "  %2 = aload f32 %c %0\n"
    "  %3 = mul f32 %s %2\n"
    "  %4 = add f32 %1 %3\n"
    "  astore %a %4 %0\n"
    "  ret\n"
    "}\n";

static void test_triad(void) {
  kr_kernel_t *k = compile(triad_kir);
  CHECK(kr_kernel_info(k)->num_args == 10);
  size_t n = 100000;
  float *v[3];
  for (int i = 0; i < 3; i++)
    CHECK((v[i] = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err)));
  for (size_t i = 0; i < n; i++)
    v[0][i] = 0, v[1][i] = (float)i, v[2][i] = 1.0f;
  int64_t ext = (int64_t)n, stride = 1;
  float s = 0.5f;
  kr_arg_t args[10];
  for (int i = 0; i < 3; i++) {
    args[3 * i] = (kr_arg_t){8, &v[i]};
    args[3 * i + 1] = (kr_arg_t){8, &ext};
    args[3 * i + 2] = (kr_arg_t){8, &stride};
  }
  args[9] = (kr_arg_t){4, &s};
  CHECK_OK(kr_launch(q, k, 1, &n, NULL, 10, args, 0, NULL, NULL, &err), &err);
  for (size_t i = 0; i < n; i++)
    CHECK(v[0][i] == (float)i + 0.5f);
  for (int i = 0; i < 3; i++)
    kr_free(v[i], NULL);
}

/* o[y, x] = y * width + x over a 2-D range whose dimension 0 (x) is the fastest. */
static const char *index2_kir = "kir 1\n"
                                "kernel @index2(%o: array(i64,2,C,global)) -> void file "
                                "\"test_kir.c\" line 1 {\n"
                                "^entry:\n"
                                "  %x = global_id i64 0\n"
                                "  %y = global_id i64 1\n"
                                "  %w = global_range i64 0\n"
                                "  %t = mul i64 %y %w\n"
                                "  %v = add i64 %t %x\n"
                                "  astore %o %v %y %x\n"
                                "  ret\n"
                                "}\n";

static void test_index2(const size_t *local) {
  kr_kernel_t *k = compile(index2_kir);
  size_t g[2] = {48, 20}; /* x, y */
  int64_t *o = kr_malloc(dev, KR_MEM_SHARED, g[0] * g[1] * 8, 0, &err);
  CHECK(o);
  memset(o, 0xff, g[0] * g[1] * 8);
  int64_t ext[2] = {(int64_t)g[1], (int64_t)g[0]}, str[2] = {(int64_t)g[0], 1};
  kr_arg_t args[] = {{8, &o}, {8, &ext[0]}, {8, &ext[1]}, {8, &str[0]}, {8, &str[1]}};
  CHECK_OK(kr_launch(q, k, 2, g, local, 5, args, 0, NULL, NULL, &err), &err);
  for (size_t i = 0; i < g[0] * g[1]; i++)
    CHECK(o[i] == (int64_t)i);
  kr_free(o, NULL);
}

/* Each work-group sums its elements through a local array (a LocalAccessor). */
static const char *group_sum_kir =
    "kir 1\n"
    "kernel @group_sum(%in: array(i32,1,C,global), %out: array(i32,1,C,global), "
    "%s: array(i32,1,C,local)) -> void file \"test_kir.c\" line 1 {\n"
    "  var $i i64\n"
    "  var $acc i32\n"
    "^entry:\n"
    "  %l = local_id i64 0\n"
    "  %g = global_id i64 0\n"
    "  %v = aload i32 %in %g\n"
    "  astore %s %v %l\n"
    "  barrier work_group\n"
    "  %z = const i64 0\n"
    "  %first = cmp bool eq %l %z\n"
    "  cbr %first ^sum ^done\n"
    "^sum:\n"
    "  %zero = const i32 0\n"
    "  store_var $acc %zero\n"
    "  store_var $i %z\n"
    "  br ^cond\n"
    "^cond:\n"
    "  %i = load_var i64 $i\n"
    "  %n = local_range i64 0\n"
    "  %more = cmp bool lt %i %n\n"
    "  cbr %more ^body ^write\n"
    "^body:\n"
    "  %i2 = load_var i64 $i\n"
    "  %e = aload i32 %s %i2\n"
    "  %a = load_var i32 $acc\n"
    "  %a2 = add i32 %a %e\n"
    "  store_var $acc %a2\n"
    "  %one = const i64 1\n"
    "  %i3 = add i64 %i2 %one\n"
    "  store_var $i %i3\n"
    "  br ^cond\n"
    "^write:\n"
    "  %grp = group_id i64 0\n"
    "  %sum = load_var i32 $acc\n"
    "  astore %out %sum %grp\n"
    "  br ^done\n"
    "^done:\n"
    "  ret\n"
    "}\n";

static void test_group_sum(void) {
  kr_kernel_t *k = compile(group_sum_kir);
  size_t n = 4096, wg = 128, groups = n / wg;
  int *in = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err);
  int *out = kr_malloc(dev, KR_MEM_SHARED, groups * 4, 0, &err);
  CHECK(in && out);
  for (size_t i = 0; i < n; i++)
    in[i] = (int)(i % 7);
  int64_t n64 = (int64_t)n, g64 = (int64_t)groups, one = 1, wg64 = (int64_t)wg;
  kr_arg_t args[] = {{8, &in},  {8, &n64}, {8, &one},      {8, &out},
                     {8, &g64}, {8, &one}, {wg * 4, NULL}, {8, &wg64}};
  CHECK_OK(kr_launch(q, k, 1, &n, &wg, 8, args, 0, NULL, NULL, &err), &err);
  for (size_t g = 0; g < groups; g++) {
    int want = 0;
    for (size_t i = g * wg; i < (g + 1) * wg; i++)
      want += (int)(i % 7);
    CHECK(out[g] == want);
  }
  kr_free(in, NULL), kr_free(out, NULL);
}

int main(void) {
  const char *driver = getenv("KAPI_TEST_DRIVER") ? getenv("KAPI_TEST_DRIVER") : "kapi-cpu";
  char lib[4096], *c;
  snprintf(lib, sizeof lib, "%s/libze_%s.so", KAPI_LIB_DIR, driver);
  for (c = strrchr(lib, '/'); *c; c++)
    if (*c == '-') *c = '_';
  if (access(lib, R_OK)) {
    printf("skipped: %s is not built\n", lib);
    return TEST_SKIP;
  }
  if (kr_init(&err) == KR_ERR_NO_DEVICE) {
    printf("skipped: %s has no device: %s\n", driver, err.message);
    return TEST_SKIP;
  }
  CHECK_OK(kr_init(&err), &err);
  for (uint32_t i = 0; i < kr_device_count() && !dev; i++)
    if (!strcmp(kr_device_info(kr_device_get(i))->driver_name, driver)) dev = kr_device_get(i);
  CHECK(dev && (q = kr_device_queue(dev, &err)));
  test_triad();
  test_index2(NULL);
  size_t l2[2] = {16, 4};
  test_index2(l2);
  test_group_sum();
  kr_shutdown();
  printf("ok\n");
  return 0;
}
