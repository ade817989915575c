/* Compiles one KIR fixture and checks the expectations written in its leading comments:
 *   ; expect-status: KC_ERR_KIR          (default KC_OK)
 *   ; expect-message: text               (substring of the error message)
 *   ; expect-spirv: text                 (substring of the SPIR-V disassembly)
 *   ; expect-no-spirv: text              (must not occur in the disassembly)
 *   ; expect-llvm: text / expect-no-llvm: text   (optimised LLVM IR)
 *   ; opt-levels: 0 2                    (default "0 2": each is compiled and checked)
 * With --host, every successful compile is also finalised for the host CPU (kc_host_finalise):
 * what the forward compiler emits must be consumable by our own drivers.
 * Every successful compile is also re-validated and checked for Import linkage and Generic
 * pointers here, apart
 * from the compiler's own checks, so a regression in those checks cannot hide a bad module. */
#include "kapi/compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (buf) buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* Value of "; key: value" lines, one by one (*pos is the scan position). */
static int next_directive(const char *text, const char *key, size_t *pos, char *out, size_t n) {
  char pat[64];
  snprintf(pat, sizeof pat, "; %s: ", key);
  const char *hit = strstr(text + *pos, pat);
  if (!hit) return 0;
  const char *v = hit + strlen(pat), *end = strchr(v, '\n');
  size_t len = end ? (size_t)(end - v) : strlen(v);
  if (len >= n) len = n - 1;
  memcpy(out, v, len);
  out[len] = '\0';
  *pos = (size_t)(v - text) + len;
  return 1;
}

static int check_texts(const char *kir, const char *key, const char *hay, int want, int level) {
  char val[512];
  int bad = 0;
  for (size_t pos = 0; next_directive(kir, key, &pos, val, sizeof val);) {
    if (!!strstr(hay, val) != want) {
      fprintf(stderr, "O%d: %s '%s' failed\n", level, key, val);
      bad = 1;
    }
  }
  return bad;
}

/* 1 if some OpFunction carries LinkageAttributes ... Import (builtin variables may). */
static int check_import_free(const void *spv, size_t n) {
  const unsigned *w = spv;
  for (size_t i = 5; i < n / 4;) {
    unsigned len = w[i] >> 16, op = w[i] & 0xffff;
    if (!len) return 1;
    if (op == 71 && len >= 4 && w[i + 2] == 41 && w[i + len - 1] == 1)
      for (size_t j = 5; j < n / 4 && w[j] >> 16; j += w[j] >> 16)
        if ((w[j] & 0xffff) == 54 && w[j + 2] == w[i + 1]) return 1;
    i += len;
  }
  return 0;
}

static int host_finalise = 0; /* --host */

static int check_host(const void *spv, size_t n, int level) {
  kc_host_module_t *m = NULL;
  char *log = NULL;
  kc_status_t st = kc_host_finalise(spv, n, &m, &log);
  if (st != KC_OK) fprintf(stderr, "O%d: host finaliser: %s: %s\n", level, kc_status_name(st), log);
  int bad = st != KC_OK || kc_host_module_kernel_count(m) != 1;
  kc_host_module_destroy(m);
  kc_free(log);
  return bad;
}

static int check_success(const char *kir, kc_program_t *prog, int level) {
  size_t n;
  const void *spv = kc_program_spirv(prog, &n);
  char *dis = NULL, *err = NULL;
  int bad = 0;
  if (kc_spirv_validate(spv, n, &err) != KC_OK) fprintf(stderr, "invalid: %s\n", err), bad = 1;
  if (check_import_free(spv, n)) fprintf(stderr, "O%d: Import linkage in SPIR-V\n", level), bad = 1;
  if (host_finalise) bad |= check_host(spv, n, level);
  if (kc_spirv_disassemble(spv, n, &dis, &err) != KC_OK) {
    fprintf(stderr, "disassembly failed: %s\n", err);
    kc_free(err);
    return 1;
  }
  if (strstr(dis, "OpTypePointer Generic")) /* every pointer has a known address space */
    fprintf(stderr, "O%d: a Generic pointer in SPIR-V\n", level), bad = 1;
  bad |= check_texts(kir, "expect-spirv", dis, 1, level);
  bad |= check_texts(kir, "expect-no-spirv", dis, 0, level);
  bad |= check_texts(kir, "expect-llvm", kc_program_llvm_ir(prog), 1, level);
  bad |= check_texts(kir, "expect-no-llvm", kc_program_llvm_ir(prog), 0, level);
  if (bad || getenv("KAPI_TEST_DUMP")) fprintf(stderr, "%s\n%s\n", kc_program_llvm_ir(prog), dis);
  kc_free(dis);
  kc_free(err);
  return bad;
}

static int run_level(const char *kir, size_t len, int level) {
  char want[64] = "KC_OK";
  size_t pos = 0;
  next_directive(kir, "expect-status", &pos, want, sizeof want);
  kc_options_t opts;
  kc_options_init(&opts);
  opts.opt_level = level;
  kc_program_t *prog = NULL;
  char *err = NULL;
  kc_status_t st = kc_compile(kir, len, &opts, &prog, &err);
  int bad = 0;
  if (strcmp(kc_status_name(st), want)) {
    fprintf(stderr, "O%d: status %s, expected %s: %s\n", level, kc_status_name(st), want,
            err ? err : "");
    bad = 1;
  } else if (st == KC_OK) {
    bad = check_success(kir, prog, level);
  } else {
    bad = check_texts(kir, "expect-message", err ? err : "", 1, level);
    if (bad) fprintf(stderr, "message: %s\n", err ? err : "(none)");
  }
  kc_program_destroy(prog);
  kc_free(err);
  return bad;
}

int main(int argc, char **argv) {
  host_finalise = argc == 3 && !strcmp(argv[2], "--host");
  if (argc != 2 && !host_finalise)
    return fprintf(stderr, "usage: run_fixture FILE.kir [--host]\n"), 2;
  size_t len;
  char *kir = read_file(argv[1], &len);
  if (!kir) return fprintf(stderr, "cannot read %s\n", argv[1]), 2;
  char levels[64] = "0 2";
  size_t pos = 0;
  next_directive(kir, "opt-levels", &pos, levels, sizeof levels);
  int bad = 0;
  for (char *s = levels; *s; s++)
    if (*s >= '0' && *s <= '3') bad |= run_level(kir, len, *s - '0');
  free(kir);
  return bad;
}
