/* Error messages for KIR: "file:line: error: what (KIR line N)". The source line comes from
 * the instruction's #N when it has one, so users see their own file:line. */
#include "kir/kir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void verror(kir_diag_t *d, const char *file, int line, int text_line, const char *fmt,
                   va_list ap) {
  if (d->msg) return; /* the first error is the one that explains the rest */
  char what[512];
  vsnprintf(what, sizeof what, fmt, ap);
  size_t n = strlen(file) + sizeof what + 64;
  d->msg = malloc(n);
  if (!d->msg) return;
  if (text_line > 0)
    snprintf(d->msg, n, "%s:%d: error: %s (KIR line %d)", file, line, what, text_line);
  else
    snprintf(d->msg, n, "%s:%d: error: %s", file, line, what);
}

void kir_error(kir_diag_t *d, const char *file, int line, int text_line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(d, file ? file : "<kir>", line, text_line, fmt, ap);
  va_end(ap);
}

int kir_inst_error(kir_diag_t *d, const kir_func_t *f, const kir_inst_t *in, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(d, f->file, in->line ? in->line : f->line, in->text_line, fmt, ap);
  va_end(ap);
  return -1;
}
