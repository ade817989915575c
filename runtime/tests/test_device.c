/* The runtime against one of kapi's Level Zero drivers (KAPI_TEST_DRIVER: kapi-cpu, the
 * default, or kapi-cuda) through the real loader: devices, memory
 * and copies, SPIR-V fixtures (OpenCL C -> clang-15 -> llvm-spirv-15), 1-3D Range and NdRange
 * launches, asynchronous launches with events and waits, and the error paths. Parts can be
 * run alone (named as arguments) so a slow tool such as valgrind runs only what it needs. Skips
 * (77) when the CPU driver has not been built. */
#include "check.h"

#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

static kr_device_t *dev;
static kr_queue_t *q;
static void *spv;
static size_t spv_size;
static kr_error_t err;
static const char *driver; /* the driver under test, as kr_device_info_t.driver_name */

static void *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(*n);
  CHECK(p && fread(p, 1, *n, f) == *n);
  fclose(f);
  return p;
}

static void setup(void) {
  CHECK_OK(kr_init(&err), &err);
  for (uint32_t i = 0; i < kr_device_count() && !dev; i++)
    if (!strcmp(kr_device_info(kr_device_get(i))->driver_name, driver)) dev = kr_device_get(i);
  CHECK(dev != NULL);
  q = kr_device_queue(dev, &err);
  CHECK(q != NULL && kr_device_queue(dev, &err) == q && kr_queue_device(q) == dev);
  spv = read_file(KERNELS_SPV, &spv_size);
}

static void test_devices(void) {
  const kr_device_info_t *in = kr_device_info(dev);
  printf("device %u: '%s' type %d vendor %s (0x%04x) driver %s v%u: %u CUs, wg %u "
         "(%u,%u,%u), local %llu B, global %llu MiB, fp16 %u fp64 %u\n",
         in->index, in->name, in->type, in->vendor_name, in->vendor_id, in->driver_name,
         in->driver_version, in->compute_units, in->max_work_group_size, in->max_group_size[0],
         in->max_group_size[1], in->max_group_size[2], (unsigned long long)in->local_mem_size,
         (unsigned long long)(in->global_mem_size >> 20), in->fp16, in->fp64);
  CHECK(in->name[0]);
  if (!strcmp(driver, "kapi-cpu"))
    CHECK(in->type == KR_DEVICE_CPU && !memcmp(in->uuid, "kapi-cpu", 8));
  if (!strcmp(driver, "kapi-cuda")) CHECK(in->type == KR_DEVICE_GPU && in->vendor_id == 0x10de);
  CHECK(in->compute_units >= 1 && in->max_work_group_size >= 1);
  CHECK(in->max_group_size[0] >= 1 && in->max_group_count[0] >= 1);
  CHECK(in->global_mem_size > 0 && in->max_alloc_size > 0 && in->local_mem_size > 0);
  CHECK(kr_device_get(in->index) == dev && kr_device_get(kr_device_count()) == NULL);

  /* The Level Zero handles behind the device and its queues (kapi's C API hands them on). */
  void *zdrv = NULL, *zdev = NULL, *zctx = NULL, *again = NULL;
  CHECK_OK(kr_device_ze_handles(dev, &zdrv, &zdev, &zctx, &err), &err);
  CHECK(zdrv && zdev && zctx && zdrv != zdev && zdev != zctx);
  CHECK_OK(kr_device_ze_handles(dev, NULL, &again, NULL, &err), &err);
  CHECK(again == zdev);
  kr_error_t e2;
  CHECK(kr_device_ze_handles(NULL, &again, NULL, NULL, &e2) == KR_ERR_INVALID_ARGUMENT);
  void *cl = kr_queue_ze_command_list(q);
  kr_queue_t *own = kr_queue_create(dev, &err);
  CHECK(own != NULL);
  CHECK(cl && cl == kr_queue_ze_command_list(q) && kr_queue_ze_command_list(own) != cl);
  CHECK(kr_queue_ze_command_list(NULL) == NULL);
  kr_queue_destroy(own);
}

static void test_memory(void) {
  const size_t n = 1 << 20;
  kr_mem_kind_t kinds[] = {KR_MEM_DEVICE, KR_MEM_SHARED, KR_MEM_HOST};
  uint32_t *host = malloc(n);
  for (int k = 0; k < 3; k++) {
    uint8_t *p = kr_malloc(dev, kinds[k], n, 64, &err);
    CHECK(p != NULL && (uintptr_t)p % 64 == 0);
    kr_pointer_info_t pi;
    CHECK_OK(kr_pointer_info(p + 100, &pi, &err), &err);
    CHECK(pi.kind == kinds[k] && pi.device == dev && pi.base == p && pi.size >= n);
    uint32_t pattern = 0xdeadbeef;
    CHECK_OK(kr_fill(q, p, &pattern, 4, n, 0, NULL, NULL, &err), &err);
    CHECK_OK(kr_memset(q, p + 8, 0x11, 4, 0, NULL, NULL, &err), &err);
    CHECK_OK(kr_memcpy(q, host, p, n, 0, NULL, NULL, &err), &err);
    CHECK(host[0] == 0xdeadbeef && host[2] == 0x11111111 && host[n / 4 - 1] == 0xdeadbeef);
    /* Asynchronous: fill, then a copy that waits for it, then wait for the copy. */
    kr_event_t *filled, *copied;
    pattern = 7;
    CHECK_OK(kr_fill(q, p, &pattern, 4, n, 0, NULL, &filled, &err), &err);
    CHECK_OK(kr_memcpy(q, host, p, n, 1, &filled, &copied, &err), &err);
    kr_event_release(filled); /* still pending perhaps: must be safe */
    CHECK_OK(kr_event_wait(copied, &err), &err);
    CHECK(kr_event_is_complete(copied) == 1);
    kr_event_release(copied);
    CHECK(host[0] == 7 && host[n / 4 - 1] == 7);
    CHECK_OK(kr_free(p, &err), &err);
  }
  kr_pointer_info_t pi;
  CHECK_OK(kr_pointer_info(host, &pi, &err), &err);
  CHECK(pi.kind == KR_MEM_UNKNOWN && pi.device == NULL);
  CHECK_FAILS(kr_free(host, &err), KR_ERR_INVALID_ARGUMENT, "not memory allocated", &err);
  CHECK(kr_malloc(dev, KR_MEM_DEVICE, 0, 0, &err) == NULL && err.status == KR_ERR_INVALID_ARGUMENT);
  CHECK(kr_malloc(dev, KR_MEM_DEVICE, 16, 3, &err) == NULL &&
        err.status == KR_ERR_INVALID_ARGUMENT);
  CHECK_FAILS(kr_fill(q, host, host, 3, 12, 0, NULL, NULL, &err), KR_ERR_INVALID_ARGUMENT,
              "pattern size 3", &err);
  kr_event_t *ev;
  CHECK_OK(kr_memcpy(q, host, host, 0, 0, NULL, &ev, &err), &err); /* nothing to copy */
  CHECK(kr_event_is_complete(ev) == 1);
  kr_event_release(ev);
  free(host);
}

static kr_kernel_t *kernel(const char *name) {
  kr_kernel_t *k = kr_kernel_get(dev, spv, spv_size, name, &err);
  if (!k) fprintf(stderr, "kr_kernel_get(%s): %s\n", name, err.message);
  CHECK(k != NULL);
  return k;
}

static void test_triad(size_t n, const size_t *local) {
  kr_kernel_t *k = kernel("triad");
  CHECK(kernel("triad") == k); /* cached by content */
  CHECK(kr_kernel_info(k)->num_args == 4 && !strcmp(kr_kernel_info(k)->name, "triad"));
  float *a = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err);
  float *b = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err);
  float *c = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err);
  CHECK(a && b && c);
  for (size_t i = 0; i < n; i++)
    a[i] = -1, b[i] = (float)i, c[i] = 2.0f * (float)i;
  float s = 3.0f;
  kr_arg_t args[] = {{8, &a}, {8, &b}, {8, &c}, {4, &s}};
  CHECK_OK(kr_launch(q, k, 1, &n, local, 4, args, 0, NULL, NULL, &err), &err);
  for (size_t i = 0; i < n; i++)
    CHECK(a[i] == (float)i + 3.0f * 2.0f * (float)i);
  kr_free(a, NULL), kr_free(b, NULL), kr_free(c, NULL);
}

/* index3 over global (1-3D) with local (NULL: Range); checks every element and the local
 * size the kernel saw against the runtime's choice. */
static void test_index(uint32_t ndim, const size_t *global, const size_t *local) {
  kr_kernel_t *k = kernel("index3");
  size_t total = 1, want[3] = {1, 1, 1};
  for (uint32_t d = 0; d < ndim; d++)
    total *= global[d];
  uint32_t *out = kr_malloc(dev, KR_MEM_SHARED, total * 4, 0, &err);
  uint32_t *ls = kr_malloc(dev, KR_MEM_SHARED, 16, 0, &err);
  CHECK(out && ls);
  CHECK_OK(kr_memset(q, out, 0, total * 4, 0, NULL, NULL, &err), &err);
  kr_arg_t args[] = {{8, &out}, {8, &ls}};
  CHECK_OK(kr_launch(q, k, ndim, global, local, 2, args, 0, NULL, NULL, &err), &err);
  for (size_t i = 0; i < total; i++)
    CHECK(out[i] == i + 1);
  if (local)
    memcpy(want, local, ndim * sizeof *local);
  else
    CHECK_OK(kr_range_group_size(k, ndim, global, want, &err), &err);
  for (uint32_t d = 0; d < 3; d++)
    CHECK(ls[d] == want[d]);
  for (uint32_t d = 0; d < ndim; d++)
    CHECK(global[d] % want[d] == 0);
  kr_free(out, NULL), kr_free(ls, NULL);
}

static void test_local_memory(void) {
  kr_kernel_t *k = kernel("group_sum");
  size_t n = 1024, wg = 64;
  int *in = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err);
  int *out = kr_malloc(dev, KR_MEM_SHARED, n / wg * 4, 0, &err);
  CHECK(in && out);
  for (size_t i = 0; i < n; i++)
    in[i] = (int)i;
  kr_arg_t args[] = {{8, &in}, {8, &out}, {wg * 4, NULL}};
  CHECK_OK(kr_launch(q, k, 1, &n, &wg, 3, args, 0, NULL, NULL, &err), &err);
  for (size_t g = 0; g < n / wg; g++) {
    int want = 0;
    for (size_t i = g * wg; i < (g + 1) * wg; i++)
      want += (int)i;
    CHECK(out[g] == want);
  }
  kr_free(in, NULL), kr_free(out, NULL);
}

static void test_launches(void) {
  test_triad(10000, NULL);
  size_t l100 = 100;
  test_triad(10000, &l100);
  test_triad(10007, NULL); /* prime: the Range choice must still divide */
  size_t g1 = 37, g2[] = {16, 9}, g3[] = {8, 6, 5}, l2[] = {4, 3}, l3[] = {2, 3, 5};
  test_index(1, &g1, NULL);
  test_index(2, g2, NULL);
  test_index(3, g3, NULL);
  test_index(2, g2, l2);
  test_index(3, g3, l3);
  test_local_memory();
}

/* Many asynchronous launches on one in-order queue, and a second queue that waits on them. */
static void test_async(void) {
  kr_kernel_t *k = kernel("add_one");
  size_t n = 4096;
  int *a = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err);
  CHECK(a);
  memset(a, 0, n * 4);
  kr_arg_t args[] = {{8, &a}};
  kr_event_t *last = NULL;
  for (int i = 0; i < 300; i++) { /* more than one event pool's worth */
    kr_event_t *ev;
    CHECK_OK(kr_launch(q, k, 1, &n, NULL, 1, args, 0, NULL, &ev, &err), &err);
    kr_event_release(last);
    last = ev;
  }
  kr_queue_t *q2 = kr_queue_create(dev, &err);
  CHECK(q2 != NULL && q2 != q);
  kr_event_t *after;
  CHECK_OK(kr_launch(q2, k, 1, &n, NULL, 1, args, 1, &last, &after, &err), &err);
  kr_event_release(last);
  CHECK_OK(kr_events_wait(1, &after, &err), &err);
  kr_event_release(after);
  for (size_t i = 0; i < n; i++)
    CHECK(a[i] == 301);
  /* Queue barrier and synchronize. */
  CHECK_OK(kr_launch(q2, k, 1, &n, NULL, 1, args, 0, NULL, &after, &err), &err);
  kr_event_release(after);
  CHECK_OK(kr_queue_synchronize(q2, &err), &err);
  CHECK(a[0] == 302 && a[n - 1] == 302);
  kr_queue_destroy(q2);
  kr_free(a, NULL);
}

/* Two threads launch one cached kernel on one queue, each on its own array: launches of a
 * kernel and appends to a queue are serialised, and each launch keeps its own arguments. */
static void *add_many(void *arg) {
  int *a = arg;
  kr_kernel_t *k = kernel("add_one");
  size_t n = 1000;
  kr_arg_t args[] = {{8, &a}};
  kr_error_t e;
  for (int i = 0; i < 200; i++) {
    kr_event_t *ev = NULL;
    if (kr_launch(q, k, 1, &n, NULL, 1, args, 0, NULL, i % 2 ? &ev : NULL, &e)) {
      fprintf(stderr, "thread launch: %s\n", e.message);
      return (void *)1;
    }
    kr_event_release(ev);
  }
  return NULL;
}

static void test_threads(void) {
  int *a[2];
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    a[i] = kr_malloc(dev, KR_MEM_SHARED, 1000 * 4, 0, &err);
    CHECK(a[i] != NULL);
    memset(a[i], 0, 1000 * 4);
  }
  for (int i = 0; i < 2; i++)
    CHECK(pthread_create(&t[i], NULL, add_many, a[i]) == 0);
  for (int i = 0; i < 2; i++) {
    void *r;
    CHECK(pthread_join(t[i], &r) == 0 && r == NULL);
  }
  CHECK_OK(kr_queue_synchronize(q, &err), &err);
  for (int i = 0; i < 2; i++) {
    for (int j = 0; j < 1000; j++)
      CHECK(a[i][j] == 200);
    kr_free(a[i], NULL);
  }
}

static void test_errors(void) {
  /* A module that is not SPIR-V, and one that is cut short. */
  uint32_t junk[16] = {0x07230203, 0x00010000, 0, 100, 0, 0xdeadbeef};
  CHECK(kr_kernel_get(dev, junk, sizeof junk, "k", &err) == NULL);
  CHECK(err.status == KR_ERR_BUILD && err.ze_result == 0x70000004);
  CHECK(strstr(err.message, "zeModuleCreate") && strstr(err.message, kr_device_info(dev)->name));
  CHECK(strstr(err.message, "build log"));
  printf("bad SPIR-V: %.300s\n", err.message);
  CHECK(kr_kernel_get(dev, spv, spv_size / 2, "triad", &err) == NULL && err.status == KR_ERR_BUILD);
  /* A failed build is not cached: the same bytes fail again. */
  CHECK(kr_kernel_get(dev, junk, sizeof junk, "k", &err) == NULL && err.status == KR_ERR_BUILD);
  CHECK(kr_kernel_get(dev, spv, spv_size, "no_such_kernel", &err) == NULL);
  CHECK(err.status == KR_ERR_KERNEL_NOT_FOUND && strstr(err.message, "no_such_kernel"));

  kr_kernel_t *k = kernel("triad");
  float *a = kr_malloc(dev, KR_MEM_SHARED, 64 * 4, 0, &err);
  float s = 1;
  kr_arg_t args[] = {{8, &a}, {8, &a}, {8, &a}, {4, &s}};
  size_t n = 60, l7 = 7, big = (size_t)kr_device_info(dev)->max_group_size[0] + 1;
  CHECK_FAILS(kr_launch(q, k, 1, &n, &l7, 4, args, 0, NULL, NULL, &err), KR_ERR_INVALID_ARGUMENT,
              "does not divide", &err);
  size_t nbig = big * 2;
  CHECK_FAILS(kr_launch(q, k, 1, &nbig, &big, 4, args, 0, NULL, NULL, &err),
              KR_ERR_INVALID_ARGUMENT, "exceeds", &err);
  CHECK_FAILS(kr_launch(q, k, 1, &n, NULL, 3, args, 0, NULL, NULL, &err), KR_ERR_INVALID_ARGUMENT,
              "takes 4 arguments, 3 given", &err);
  CHECK_FAILS(kr_launch(q, k, 4, &n, NULL, 4, args, 0, NULL, NULL, &err), KR_ERR_INVALID_ARGUMENT,
              "dimensions", &err);
  kr_arg_t bad[] = {{8, &a}, {8, &a}, {8, &a}, {2, &s}};
  CHECK_FAILS(kr_launch(q, k, 1, &n, NULL, 4, bad, 0, NULL, NULL, &err), KR_ERR_INVALID_ARGUMENT,
              "argument 3", &err);
  /* The kernel still works after the failures. */
  CHECK_OK(kr_launch(q, k, 1, &n, NULL, 4, args, 0, NULL, NULL, &err), &err);
  /* Zero work-items launch nothing but still give a completed event. */
  size_t zero = 0;
  kr_event_t *ev;
  CHECK_OK(kr_launch(q, k, 1, &zero, NULL, 4, args, 0, NULL, &ev, &err), &err);
  CHECK_OK(kr_event_wait(ev, &err), &err);
  kr_event_release(ev);
  kr_free(a, NULL);

  /* An explicit module of one's own. */
  kr_module_t *m = kr_module_create(dev, spv, spv_size, NULL, &err);
  CHECK(m != NULL);
  kr_kernel_t *e = kr_module_kernel(m, "empty", &err);
  CHECK(e && kr_module_kernel(m, "empty", &err) == e && e != kernel("empty"));
  size_t one = 1;
  CHECK_OK(kr_launch(q, e, 1, &one, NULL, 0, NULL, 0, NULL, NULL, &err), &err);
  kr_module_destroy(m);
}

/* Native binaries: the driver's binary of a built module makes the same kernels when filed
 * under other bytes (bytes that would not build as SPIR-V, so a working kernel proves the
 * binary was used); a junk binary is refused and nothing is cached. */
static void test_native(void) {
  void *bin = NULL;
  size_t len = 0;
  CHECK_OK(kr_module_native_binary(dev, spv, spv_size, &bin, &len, &err), &err);
  CHECK(bin && len > 16);
  uint8_t *key = calloc(1, spv_size + 4);
  memcpy(key, spv, spv_size);
  CHECK_OK(kr_module_cache_native(dev, key, spv_size + 4, bin, len, &err), &err);
  CHECK_OK(kr_module_cache_native(dev, key, spv_size + 4, bin, len, &err), &err); /* cached */
  kr_kernel_t *k = kr_kernel_get(dev, key, spv_size + 4, "triad", &err);
  CHECK(k != NULL && k != kernel("triad"));
  size_t n = 256;
  float *a = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err);
  float *b = kr_malloc(dev, KR_MEM_SHARED, n * 4, 0, &err);
  CHECK(a && b);
  for (size_t i = 0; i < n; i++)
    a[i] = -1, b[i] = (float)i;
  float s = 2.0f;
  kr_arg_t args[] = {{8, &a}, {8, &b}, {8, &b}, {4, &s}};
  if (k) CHECK_OK(kr_launch(q, k, 1, &n, NULL, 4, args, 0, NULL, NULL, &err), &err);
  for (size_t i = 0; i < n; i++)
    CHECK(a[i] == 3.0f * (float)i);
  kr_free(a, NULL), kr_free(b, NULL);
  uint8_t junk[64] = {1, 2, 3};
  key[spv_size] = 1; /* other bytes, not cached yet */
  CHECK(kr_module_cache_native(dev, key, spv_size + 4, junk, sizeof junk, &err) != KR_OK);
  CHECK(strstr(err.message, "native binary") != NULL);
  printf("junk native binary: %.200s\n", err.message);
  CHECK(kr_kernel_get(dev, key, spv_size + 4, "triad", &err) == NULL); /* nothing cached */
  CHECK(kr_module_cache_native(dev, key, spv_size + 4, NULL, 0, &err) == KR_ERR_INVALID_ARGUMENT);
  free(key);
  free(bin);
}

int main(int argc, char **argv) {
  driver = getenv("KAPI_TEST_DRIVER") ? getenv("KAPI_TEST_DRIVER") : "kapi-cpu";
  char lib[4096], *c;
  snprintf(lib, sizeof lib, "%s/libze_%s.so", KAPI_LIB_DIR, driver);
  for (c = strrchr(lib, '/'); *c; c++)
    if (*c == '-') *c = '_';
  if (access(lib, R_OK)) {
    printf("skipped: %s not built\n", lib);
    return TEST_SKIP;
  }
  if (kr_init(&err) == KR_ERR_NO_DEVICE) {
    printf("skipped: %s has no device: %s\n", driver, err.message);
    return TEST_SKIP;
  }
  setup();
  for (int i = 1; i < (argc > 1 ? argc : 2); i++) {
    const char *part = argc > 1 ? argv[i] : "all";
    bool all = !strcmp(part, "all");
    if (all || !strcmp(part, "devices")) test_devices();
    if (all || !strcmp(part, "memory")) test_memory();
    if (all || !strcmp(part, "launch")) test_launches();
    if (all || !strcmp(part, "async")) test_async();
    if (all || !strcmp(part, "threads")) test_threads();
    if (all || !strcmp(part, "errors")) test_errors();
    if (all || !strcmp(part, "native")) test_native();
  }
  free(spv);
  kr_shutdown();
  /* The runtime starts again after a shutdown. */
  CHECK_OK(kr_init(&err), &err);
  CHECK(kr_device_count() >= 1);
  kr_shutdown();
  printf("ok\n");
  return 0;
}
