/* Test tool: finalises a SPIR-V file to PTX with the NVPTX finaliser and writes the PTX (and a
 * kernel table on stderr). Usage: nvptx_finalise_tool in.spv out.ptx [libdevice.bc]
 * Exit 0 on success, 1 when the finaliser reports an error (message on stderr), 2 on misuse.
 */
#include "kapi/compiler.h"

#include <stdio.h>
#include <stdlib.h>

static void *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc(len > 0 ? (size_t)len : 1);
  *n = buf ? fread(buf, 1, (size_t)len, f) : 0;
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s in.spv out.ptx [libdevice.bc]\n", argv[0]);
    return 2;
  }
  size_t n = 0;
  void *spv = read_file(argv[1], &n);
  if (!spv) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  kc_nvptx_options_t o;
  kc_nvptx_options_init(&o);
  o.libdevice_path = argc > 3 ? argv[3] : NULL;
  kc_nvptx_module_t *m = NULL;
  char *log = NULL;
  kc_status_t st = kc_nvptx_finalise(spv, n, &o, &m, &log);
  free(spv);
  if (st != KC_OK) {
    fprintf(stderr, "status %d: %s\n", (int)st, log ? log : "(no log)");
    free(log);
    return 1;
  }
  size_t len;
  const char *ptx = kc_nvptx_module_ptx(m, &len);
  FILE *out = fopen(argv[2], "wb");
  if (!out || fwrite(ptx, 1, len, out) != len) return 2;
  fclose(out);
  for (uint32_t i = 0; i < kc_nvptx_module_kernel_count(m); ++i) {
    const kc_nvptx_kernel_t *k = kc_nvptx_module_kernel(m, i);
    fprintf(stderr, "kernel %s:", k->name);
    for (uint32_t a = 0; a < k->num_args; ++a)
      fprintf(stderr, " %s%u", k->args[a].kind == KC_ARG_LOCAL ? "local" : "v", k->args[a].size);
    fprintf(stderr, "\n");
  }
  kc_nvptx_module_destroy(m);
  return 0;
}
