/* KAPI_CUDA_DEBUG_PTX=DIR: a debugging aid for faults in kapi's own PTX. Each module's PTX is
 * written to DIR/kapi-<n>-<pid>.ptx and JIT-compiled with line information whose line numbers
 * are that file's own (a `.loc` before every instruction), so compute-sanitizer and cuda-gdb
 * name the PTX line of a faulting instruction rather than an offset in SASS. Off by default:
 * the annotated JIT is slower and its code may differ in scheduling.
 */
#include "cuda_driver.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cuda_ptx_debug_dir(void) {
  const char *d = getenv("KAPI_CUDA_DEBUG_PTX");
  return d && *d ? d : NULL;
}

/* An instruction line of a function body: indented, not a directive, label, brace or comment. */
static int is_instruction(const char *line, size_t len, int in_body) {
  if (!in_body || len == 0 || (line[0] != '\t' && line[0] != ' ')) return 0;
  size_t i = 0;
  while (i < len && (line[i] == '\t' || line[i] == ' '))
    ++i;
  if (i == len) return 0;
  char c = line[i];
  if (c == '.' || c == '{' || c == '}' || c == '/' || c == ')' || c == '(') return 0;
  size_t end = len;
  while (end > i && (line[end - 1] == ' ' || line[end - 1] == '\r'))
    --end;
  return line[end - 1] != ':' && line[end - 1] != ',';
}

static void write_copy(const char *dir, const char *ptx, char *path, size_t cap) {
  static atomic_uint serial;
  snprintf(path, cap, "%s/kapi-%u-%d.ptx", dir, atomic_fetch_add(&serial, 1), (int)getpid());
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "kapi cuda: KAPI_CUDA_DEBUG_PTX: cannot write %s\n", path);
    return;
  }
  fputs(ptx, f);
  fclose(f);
  fprintf(stderr, "kapi cuda: PTX written to %s\n", path);
}

char *cuda_ptx_debug_annotate(const char *dir, const char *ptx) {
  char path[4096];
  write_copy(dir, ptx, path, sizeof path);
  size_t n = strlen(ptx), lines = 1;
  for (size_t i = 0; i < n; ++i)
    lines += ptx[i] == '\n';
  size_t cap = n + lines * 24 + strlen(path) + 64;
  char *out = malloc(cap);
  if (!out) return NULL;
  size_t o = 0, line = 0;
  int in_body = 0, have_file = 0;
  for (const char *p = ptx; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    ++line;
    if (memchr(p, '{', len)) in_body = 1;
    if (have_file && is_instruction(p, len, in_body))
      o += (size_t)snprintf(out + o, cap - o, "\t.loc 1 %zu 0\n", line);
    memcpy(out + o, p, len);
    o += len;
    out[o++] = '\n';
    /* `.file` must follow the module header (.version/.target/.address_size). */
    if (!have_file && len >= 13 && strncmp(p, ".address_size", 13) == 0) {
      o += (size_t)snprintf(out + o, cap - o, ".file 1 \"%s\"\n", path);
      have_file = 1;
    }
    p = nl ? nl + 1 : p + len;
  }
  out[o] = '\0';
  return out;
}
