/* KIR parser: text -> kir_module_t, line by line (one item per line). It checks only the
 * grammar and resolves names; types and control flow are kir_verify.c's business. Operands
 * follow each op's spec string from kir.h, so adding an op is one table row. */
#define _GNU_SOURCE /* strtod_l: literals must not depend on the host process's locale */
#include "kir/kir.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
  kir_module_t *m;
  kir_arena_t *a;
  kir_diag_t *d;
  kir_func_t *f; /* current function, or NULL between functions */
  int block;     /* current block index, or -1 */
  int text_line; /* line in the KIR text */
  int src_line;  /* #N of the current line, or 0 */
  kir_tok_t *t;  /* tokens of the current line */
  int n, i;      /* token count and cursor */
  int *vhash;    /* value name -> index + 1 (0 empty), open addressing; per function */
  int vhash_cap; /* a power of two, at least twice the number of values */
} parser_t;

static int perr(parser_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int perr(parser_t *p, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (!p->f) {
    kir_error(p->d, "<kir>", p->text_line, 0, "%s", what);
  } else {
    int line = p->src_line ? p->src_line : p->f->line;
    kir_error(p->d, p->f->file, line, p->text_line, "%s", what);
  }
  return -1;
}

static kir_tok_t *peek(parser_t *p) {
  return p->i < p->n ? &p->t[p->i] : NULL;
}

static const char *tok_desc(parser_t *p) {
  kir_tok_t *t = peek(p);
  return t ? t->text : "end of line";
}

static int accept_punct(parser_t *p, const char *s) {
  kir_tok_t *t = peek(p);
  if (t && t->kind == KIR_TOK_PUNCT && !strcmp(t->text, s)) return p->i++, 1;
  return 0;
}

static int expect_punct(parser_t *p, const char *s) {
  if (accept_punct(p, s)) return 0;
  return perr(p, "expected '%s', found '%s'", s, tok_desc(p));
}

static const char *expect(parser_t *p, kir_tok_kind_t kind, const char *what) {
  kir_tok_t *t = peek(p);
  if (t && t->kind == kind) return p->i++, t->text;
  perr(p, "expected %s, found '%s'", what, tok_desc(p));
  return NULL;
}

static int parse_int_word(parser_t *p, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s == '\0' || *end || errno) return perr(p, "expected an integer, found '%s'", s);
  *out = v;
  return 0;
}

/* ---- types ---- */

/* The optional static extents after the address space (",E0[,E1[,E2]]"; the lexer treats
 * commas as blanks). Returns their count. */
static int parse_static_shape(parser_t *p, uint32_t shape[3]) {
  int n = 0;
  for (kir_tok_t *t = peek(p); t && t->kind == KIR_TOK_WORD; t = peek(p)) {
    int64_t v;
    p->i++;
    if (parse_int_word(p, t->text, &v)) return -1;
    if (n == 3) return perr(p, "an array has at most 3 static extents");
    if (v < 1 || v > (int64_t)KIR_MAX_STATIC_EXTENT)
      return perr(p, "static array extent %lld out of range", (long long)v);
    shape[n++] = (uint32_t)v;
  }
  return n;
}

static int parse_array_type(parser_t *p, kir_type_t *t) {
  const char *w[4];
  if (expect_punct(p, "(")) return -1;
  for (int k = 0; k < 4; k++)
    if (!(w[k] = expect(p, KIR_TOK_WORD, "an array type field"))) return -1;
  uint32_t shape[3] = {0, 0, 0};
  int nshape = parse_static_shape(p, shape);
  if (nshape < 0 || expect_punct(p, ")")) return -1;
  int elem = kir_scalar_kind(w[0]);
  if (elem <= KIR_VOID) return perr(p, "bad array element type '%s'", w[0]);
  if (strlen(w[1]) != 1 || w[1][0] < '1' || w[1][0] > '0' + KIR_MAX_NDIM)
    return perr(p, "array rank must be 1 to %d, not '%s'", KIR_MAX_NDIM, w[1]);
  const char *lay = strlen(w[2]) == 1 ? strchr("CFA", w[2][0]) : NULL;
  if (!lay) return perr(p, "array layout must be C, F or A, not '%s'", w[2]);
  static const char *const spaces[] = {"global", "local", "private", NULL};
  int space = kir_word_lookup(spaces, w[3]);
  if (space < 0) return perr(p, "array address space must be global, local or private");
  *t = (kir_type_t){KIR_ARRAY,
                    (uint8_t)elem,
                    (uint8_t)(w[1][0] - '0'),
                    (uint8_t)(lay - "CFA"),
                    (uint8_t)space,
                    {shape[0], shape[1], shape[2]}};
  if (nshape && nshape != t->ndim)
    return perr(p, "array of rank %d needs %d static extents, not %d", t->ndim, t->ndim, nshape);
  if (nshape && space != KIR_LOCAL) return perr(p, "only local arrays may have static extents");
  if (space != KIR_GLOBAL && t->ndim > 3)
    return perr(p, "local and private arrays have 1 to 3 dimensions, not %d", t->ndim);
  return 0;
}

static int parse_type(parser_t *p, kir_type_t *t) {
  const char *w = expect(p, KIR_TOK_WORD, "a type");
  if (!w) return -1;
  if (!strcmp(w, "array")) return parse_array_type(p, t);
  int k = kir_scalar_kind(w);
  if (k < 0) return perr(p, "unknown type '%s'", w);
  *t = (kir_type_t){.kind = (uint8_t)k};
  return 0;
}

/* ---- names ---- */

static unsigned name_hash(const char *s) {
  unsigned h = 2166136261u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* The slot of name in the value table: its entry, or the empty one where it would go. */
static int *value_slot(parser_t *p, const char *name) {
  unsigned mask = (unsigned)p->vhash_cap - 1;
  for (unsigned h = name_hash(name) & mask;; h = (h + 1) & mask) {
    int *e = &p->vhash[h];
    if (!*e || !strcmp(p->f->values[*e - 1].name, name)) return e;
  }
}

/* Keeps the table at most half full (lookups stay O(1) in large kernels). */
static int grow_values(parser_t *p) {
  if (p->vhash && 2 * (p->f->nvalues + 1) <= p->vhash_cap) return 0;
  int cap = p->vhash_cap ? 2 * p->vhash_cap : 256;
  int *old = p->vhash;
  if (!(p->vhash = kir_alloc(p->a, sizeof(int) * (size_t)cap))) return -1;
  p->vhash_cap = cap;
  for (int i = 0; old && i < p->f->nvalues; i++)
    *value_slot(p, p->f->values[i].name) = i + 1;
  return 0;
}

static int find_value(parser_t *p, const char *name) {
  if (!p->vhash) return -1;
  return *value_slot(p, name) - 1;
}

/* The value called name, created (undefined) on first sight. */
static int value_ref(parser_t *p, const char *name) {
  int v = find_value(p, name);
  if (v >= 0) return v;
  if (grow_values(p)) return perr(p, "out of memory");
  kir_value_t *val = kir_push(p->a, &p->f->values, &p->f->nvalues, &p->f->values_cap, sizeof *val);
  if (!val) return perr(p, "out of memory");
  *value_slot(p, name) = p->f->nvalues;
  *val = (kir_value_t){.name = name,
                       .param = -1,
                       .block = -1,
                       .inst = -1,
                       .use_line = p->src_line,
                       .use_text_line = p->text_line};
  return p->f->nvalues - 1;
}

static int value_def(parser_t *p, const char *name, kir_type_t type) {
  int v = value_ref(p, name);
  if (v < 0) return -1;
  kir_value_t *val = &p->f->values[v];
  if (val->param >= 0 || val->block >= 0) return perr(p, "value %%%s is defined twice", name);
  val->type = type;
  return v;
}

static int block_ref(parser_t *p, const char *name) {
  kir_func_t *f = p->f;
  for (int i = 0; i < f->nblocks; i++)
    if (!strcmp(f->blocks[i].name, name)) return i;
  kir_block_t *b = kir_push(p->a, &f->blocks, &f->nblocks, &f->blocks_cap, sizeof *b);
  if (!b) return perr(p, "out of memory");
  *b = (kir_block_t){.name = name, .text_line = p->text_line};
  return f->nblocks - 1;
}

static int var_ref(parser_t *p, const char *name) {
  for (int i = 0; i < p->f->nvars; i++)
    if (!strcmp(p->f->vars[i].name, name)) return i;
  return perr(p, "unknown variable slot $%s", name);
}

/* ---- constants ---- */

static int parse_int_const(parser_t *p, kir_kind_t k, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  int bits = kir_bits(k);
  if (s[0] == '-') {
    long long v = strtoll(s, &end, 10);
    if (*end || errno || (bits < 64 && v < -(1LL << (bits - 1))))
      return perr(p, "constant '%s' does not fit %d bits", s, bits);
    *out = v;
    return 0;
  }
  unsigned long long v = strtoull(s, &end, 10);
  if (*s == '\0' || *end || errno || (bits < 64 && v >> bits))
    return perr(p, "constant '%s' does not fit %d bits", s, bits);
  *out = (int64_t)v;
  return 0;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void make_c_locale(void) {
  c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* strtod in the C locale: Python may have set LC_NUMERIC to one with a decimal comma. */
static double c_strtod(const char *s, char **end) {
  pthread_once(&c_locale_once, make_c_locale);
  return c_locale ? strtod_l(s, end, c_locale) : strtod(s, end);
}

static int parse_const(parser_t *p, kir_inst_t *in, const char *s) {
  kir_kind_t k = in->type.kind;
  if (k == KIR_BOOL) {
    static const char *const words[] = {"0", "false", "1", "true", NULL};
    int w = kir_word_lookup(words, s);
    if (w < 0) return perr(p, "bool constant must be 0, 1, true or false, not '%s'", s);
    in->cval.i = w >= 2;
    return 0;
  }
  if (kir_is_int(k)) return parse_int_const(p, k, s, &in->cval.i);
  if (!kir_is_float(k)) return perr(p, "const needs a scalar type");
  if (!strcmp(s, "inf") || !strcmp(s, "+inf")) return in->cval.f = INFINITY, 0;
  if (!strcmp(s, "-inf")) return in->cval.f = -INFINITY, 0;
  if (!strcmp(s, "nan")) return in->cval.f = NAN, 0;
  char *end;
  in->cval.f = c_strtod(s, &end);
  if (*s == '\0' || *end) return perr(p, "bad float constant '%s'", s);
  return 0;
}

/* ---- instructions ---- */

static int parse_keyword(parser_t *p, const char *const *table, const char *what, int *out) {
  const char *w = expect(p, KIR_TOK_WORD, what);
  if (!w) return -1;
  if ((*out = kir_word_lookup(table, w)) < 0) return perr(p, "unknown %s '%s'", what, w);
  return 0;
}

static int push_arg(parser_t *p, kir_inst_t *in, int v, int *cap) {
  int *slot = kir_push(p->a, &in->args, &in->nargs, cap, sizeof *slot);
  if (!slot) return perr(p, "out of memory");
  *slot = v;
  return 0;
}

static int parse_value_arg(parser_t *p, kir_inst_t *in, int *cap) {
  const char *name = expect(p, KIR_TOK_VALUE, "a %value");
  if (!name) return -1;
  int v = value_ref(p, name);
  return v < 0 ? -1 : push_arg(p, in, v, cap);
}

static int parse_literals(parser_t *p, kir_inst_t *in, int all) {
  do {
    const char *w = expect(p, KIR_TOK_WORD, "an integer literal");
    if (!w) return -1;
    if (in->nlits == 3) return perr(p, "at most 3 literal dimensions");
    if (parse_int_word(p, w, &in->lits[in->nlits++])) return -1;
  } while (all && peek(p));
  return 0;
}

static int parse_slot_operand(parser_t *p, kir_inst_t *in) {
  const char *w = expect(p, KIR_TOK_VAR, "a $slot");
  if (!w) return -1;
  in->var = var_ref(p, w);
  return in->var < 0 ? -1 : 0;
}

static int parse_block_operand(parser_t *p, kir_inst_t *in, int *ntargets) {
  const char *w = expect(p, KIR_TOK_BLOCK, "a ^block");
  if (!w) return -1;
  int b = block_ref(p, w);
  in->targets[(*ntargets)++] = b;
  return b < 0 ? -1 : 0;
}

static int parse_operand(parser_t *p, kir_inst_t *in, char c, int *cap, int *ntargets) {
  const char *w;
  switch (c) {
  case 'T':
    return parse_type(p, &in->type);
  case 'L':
    return (w = expect(p, KIR_TOK_WORD, "a constant")) ? parse_const(p, in, w) : -1;
  case 'v':
    return parse_value_arg(p, in, cap);
  case 'V':
    return parse_slot_operand(p, in);
  case 'd':
    return parse_literals(p, in, 0);
  case 'D':
    return parse_literals(p, in, 1);
  case 'b':
    return parse_block_operand(p, in, ntargets);
  case 'p':
    return parse_keyword(p, kir_pred_names, "predicate", &in->sub);
  case 'm':
    return parse_keyword(p, kir_math_names, "math function", &in->sub);
  case 'o':
    return parse_keyword(p, kir_rmw_names, "atomic operation", &in->sub);
  case 'g':
    return parse_keyword(p, kir_group_op_names, "group operation", &in->sub);
  case 'O':
    return parse_keyword(p, kir_order_names, "memory order", &in->order);
  case 'S':
    return parse_keyword(p, kir_scope_names, "memory scope", &in->scope);
  case 'f':
    return parse_keyword(p, kir_fill_names, "fill", &in->sub);
  case '@':
    return (in->callee_name = expect(p, KIR_TOK_FUNC, "a @function")) ? 0 : -1;
  case '?':
    return peek(p) ? parse_value_arg(p, in, cap) : 0;
  case 's':
    return (in->str = expect(p, KIR_TOK_STRING, "a string")) ? 0 : -1;
  case '*':
    while (peek(p))
      if (parse_value_arg(p, in, cap)) return -1;
    return 0;
  }
  return perr(p, "internal: bad operand spec '%c'", c);
}

static int parse_operands(parser_t *p, kir_inst_t *in) {
  int cap = 0, ntargets = 0;
  for (const char *s = kir_op_spec(in->op); *s; s++)
    if (parse_operand(p, in, *s, &cap, &ntargets)) return -1;
  if (peek(p))
    return perr(p, "unexpected '%s' after the operands of %s", tok_desc(p), kir_op_name(in->op));
  return 0;
}

static int parse_inst(parser_t *p) {
  if (p->block < 0) return perr(p, "instruction outside a block (add a ^label: line first)");
  const char *result = NULL;
  if (p->n >= 2 && p->t[0].kind == KIR_TOK_VALUE && p->t[1].kind == KIR_TOK_PUNCT &&
      !strcmp(p->t[1].text, "=")) {
    result = p->t[0].text;
    p->i = 2;
  }
  const char *opname = expect(p, KIR_TOK_WORD, "an operation");
  if (!opname) return -1;
  int op = kir_op_lookup(opname);
  if (op < 0) return perr(p, "unknown operation '%s'", opname);
  kir_inst_t in = {.op = op,
                   .result = -1,
                   .var = -1,
                   .callee = -1,
                   .targets = {-1, -1},
                   .line = p->src_line,
                   .text_line = p->text_line};
  if (parse_operands(p, &in)) return -1;
  int typed = kir_op_spec(op)[0] == 'T';
  if (result && (!typed || (op == KIR_OP_CALL && in.type.kind == KIR_VOID)))
    return perr(p, "%s produces no value; drop '%%%s ='", opname, result);
  if (!result && typed && op != KIR_OP_CALL) return perr(p, "%s needs a result '%%r ='", opname);
  if (result && (in.result = value_def(p, result, in.type)) < 0) return -1;
  kir_block_t *b = &p->f->blocks[p->block]; /* after operands: block_ref may move blocks */
  kir_inst_t *slot = kir_push(p->a, &b->insts, &b->ninsts, &b->cap, sizeof *slot);
  if (!slot) return perr(p, "out of memory");
  *slot = in;
  if (in.result >= 0) {
    p->f->values[in.result].block = p->block;
    p->f->values[in.result].inst = b->ninsts - 1;
  }
  return 0;
}

/* ---- functions ---- */

static int parse_param(parser_t *p) {
  const char *name = expect(p, KIR_TOK_VALUE, "a %parameter");
  kir_type_t t;
  if (!name || expect_punct(p, ":") || parse_type(p, &t)) return -1;
  int v = value_def(p, name, t);
  if (v < 0) return -1;
  int *slot = kir_push(p->a, &p->f->params, &p->f->nparams, &p->f->params_cap, sizeof *slot);
  if (!slot) return perr(p, "out of memory");
  *slot = v;
  p->f->values[v].param = p->f->nparams - 1;
  return 0;
}

/* `max_registers N`: a kernel's cap on registers per work-item, as CUDA's maxnreg, which
 * ptxas accepts from 16 to 255 (docs/kir.md). */
static int parse_max_registers(parser_t *p) {
  const char *w = expect(p, KIR_TOK_WORD, "a register count");
  int64_t v;
  if (!w || parse_int_word(p, w, &v)) return -1;
  if (!p->f->is_kernel) return perr(p, "max_registers is an attribute of the kernel only");
  if (v < KIR_MIN_REGISTERS || v > KIR_MAX_REGISTERS)
    return perr(p, "max_registers must be %d..%d, not %lld", KIR_MIN_REGISTERS, KIR_MAX_REGISTERS,
                (long long)v);
  p->f->max_registers = (int)v;
  return 0;
}

/* `group_size X Y Z`: the work-group size every launch of the kernel must have (SYCL's
 * reqd_work_group_size), each 1..KIR_MAX_GROUP_SIZE (docs/kir.md). */
static int parse_group_size(parser_t *p) {
  if (!p->f->is_kernel) return perr(p, "group_size is an attribute of the kernel only");
  for (int d = 0; d < 3; d++) {
    const char *w = expect(p, KIR_TOK_WORD, "a work-group size");
    int64_t v;
    if (!w || parse_int_word(p, w, &v)) return -1;
    if (v < 1 || v > KIR_MAX_GROUP_SIZE)
      return perr(p, "group_size must be 1..%d in each dimension, not %lld", KIR_MAX_GROUP_SIZE,
                  (long long)v);
    p->f->group_size[d] = (int)v;
  }
  return 0;
}

/* `fastmath FLAG...`: LLVM's fast-math flag names (docs/kir.md), at least one; the words
 * that follow and are flag names belong to it. */
static int parse_fastmath(parser_t *p) {
  static const struct {
    const char *name;
    unsigned bit;
  } flags[] = {{"fast", KIR_FM_FAST},         {"nnan", KIR_FM_NNAN},      {"ninf", KIR_FM_NINF},
               {"nsz", KIR_FM_NSZ},           {"arcp", KIR_FM_ARCP},      {"afn", KIR_FM_AFN},
               {"contract", KIR_FM_CONTRACT}, {"reassoc", KIR_FM_REASSOC}};
  int n = 0;
  kir_tok_t *t;
  while ((t = peek(p)) && t->kind == KIR_TOK_WORD) {
    size_t i = 0;
    while (i < sizeof flags / sizeof flags[0] && strcmp(t->text, flags[i].name))
      i++;
    if (i == sizeof flags / sizeof flags[0]) break;
    p->f->fastmath |= flags[i].bit;
    p->i++, n++;
  }
  if (n) return 0;
  return perr(p, "fastmath takes flags (fast nnan ninf nsz arcp contract afn reassoc), not '%s'",
              tok_desc(p));
}

static int parse_header_tail(parser_t *p) {
  kir_func_t *f = p->f;
  if (expect_punct(p, "->") || parse_type(p, &f->ret)) return -1;
  kir_tok_t *t;
  while ((t = peek(p)) && t->kind == KIR_TOK_WORD) {
    p->i++;
    if (!strcmp(t->text, "file")) {
      if (!(f->file = expect(p, KIR_TOK_STRING, "a file name string"))) return -1;
    } else if (!strcmp(t->text, "line")) {
      const char *w = expect(p, KIR_TOK_WORD, "a line number");
      int64_t v;
      if (!w || parse_int_word(p, w, &v)) return -1;
      f->line = (int)v;
    } else if (!strcmp(t->text, "max_registers")) {
      if (parse_max_registers(p)) return -1;
    } else if (!strcmp(t->text, "fastmath")) {
      if (parse_fastmath(p)) return -1;
    } else if (!strcmp(t->text, "group_size")) {
      if (parse_group_size(p)) return -1;
    } else {
      return perr(p, "unexpected '%s' in function header", t->text);
    }
  }
  if (expect_punct(p, "{")) return -1;
  return peek(p) ? perr(p, "unexpected '%s' after '{'", tok_desc(p)) : 0;
}

static int parse_func_header(parser_t *p) {
  kir_module_t *m = p->m;
  kir_func_t *f = kir_push(p->a, &m->funcs, &m->nfuncs, &m->funcs_cap, sizeof *f);
  if (!f) return perr(p, "out of memory");
  f->is_kernel = !strcmp(p->t[0].text, "kernel");
  f->file = "<kir>";
  f->line = p->text_line;
  f->text_line = p->text_line;
  p->f = f;
  p->vhash = NULL;
  p->vhash_cap = 0;
  p->block = -1;
  p->i = 1;
  if (!(f->name = expect(p, KIR_TOK_FUNC, "a @function name"))) return -1;
  if (expect_punct(p, "(")) return -1;
  while (!accept_punct(p, ")"))
    if (parse_param(p)) return -1;
  return parse_header_tail(p);
}

static int parse_var(parser_t *p) {
  kir_func_t *f = p->f;
  if (f->nblocks) return perr(p, "var lines must come before the first block");
  p->i = 1;
  const char *name = expect(p, KIR_TOK_VAR, "a $slot name");
  kir_type_t t;
  if (!name || parse_type(p, &t)) return -1;
  if (peek(p)) return perr(p, "unexpected '%s' after var", tok_desc(p));
  for (int i = 0; i < f->nvars; i++)
    if (!strcmp(f->vars[i].name, name)) return perr(p, "variable slot $%s declared twice", name);
  kir_var_t *v = kir_push(p->a, &f->vars, &f->nvars, &f->vars_cap, sizeof *v);
  if (!v) return perr(p, "out of memory");
  *v = (kir_var_t){name, t};
  return 0;
}

static int parse_label(parser_t *p) {
  int b = block_ref(p, p->t[0].text);
  if (b < 0) return -1;
  if (p->f->blocks[b].defined) return perr(p, "block ^%s is defined twice", p->t[0].text);
  p->f->blocks[b].defined = 1;
  p->f->blocks[b].text_line = p->text_line;
  p->block = b;
  return 0;
}

/* Names used but never defined, found once the function is complete. */
static int end_func(parser_t *p) {
  kir_func_t *f = p->f;
  if (p->n != 1) return perr(p, "unexpected '%s' after '}'", p->t[1].text);
  for (int i = 0; i < f->nvalues; i++) {
    kir_value_t *v = &f->values[i];
    if (v->param < 0 && v->block < 0) {
      kir_error(p->d, f->file, v->use_line ? v->use_line : f->line, v->use_text_line,
                "undefined value %%%s", v->name);
      return -1;
    }
  }
  for (int i = 0; i < f->nblocks; i++)
    if (!f->blocks[i].defined) {
      p->text_line = f->blocks[i].text_line;
      p->src_line = 0;
      return perr(p, "undefined block ^%s", f->blocks[i].name);
    }
  if (!f->nblocks) return perr(p, "function @%s has no blocks", f->name);
  p->f = NULL;
  return 0;
}

static int parse_item(parser_t *p) {
  kir_tok_t *t0 = &p->t[0];
  if (!p->f) {
    if (t0->kind == KIR_TOK_WORD && (!strcmp(t0->text, "kernel") || !strcmp(t0->text, "func")))
      return parse_func_header(p);
    return perr(p, "expected 'kernel' or 'func', found '%s'", t0->text);
  }
  if (t0->kind == KIR_TOK_PUNCT && !strcmp(t0->text, "}")) return end_func(p);
  if (t0->kind == KIR_TOK_WORD && !strcmp(t0->text, "var")) return parse_var(p);
  if (t0->kind == KIR_TOK_BLOCK && p->n == 2 && p->t[1].kind == KIR_TOK_PUNCT &&
      !strcmp(p->t[1].text, ":"))
    return parse_label(p);
  return parse_inst(p);
}

/* Lexes one line; strips a trailing #N into p->src_line. Returns the token count or -1. */
static int lex(parser_t *p, const char *s, size_t len) {
  const char *bad = NULL;
  p->src_line = 0;
  p->i = 0;
  p->n = kir_lex_line(p->a, s, len, &p->t, &bad);
  if (p->n < 0) return perr(p, "%s", bad);
  if (p->n && p->t[p->n - 1].kind == KIR_TOK_LINE) {
    int64_t v;
    if (parse_int_word(p, p->t[p->n - 1].text, &v)) return -1;
    p->src_line = (int)v;
    p->n--;
  }
  return p->n;
}

static int parse_lines(parser_t *p, const char *text, size_t len) {
  int seen_header = 0;
  for (size_t pos = 0; pos < len;) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - text) : len;
    p->text_line++;
    if (lex(p, text + pos, end - pos) < 0) return -1;
    pos = end + 1;
    if (!p->n) continue;
    if (!seen_header) {
      if (p->n != 2 || strcmp(p->t[0].text, "kir") || strcmp(p->t[1].text, "1"))
        return perr(p, "the first line must be 'kir 1'");
      seen_header = 1;
      continue;
    }
    if (parse_item(p)) return -1;
  }
  if (!seen_header) return perr(p, "empty module: the first line must be 'kir 1'");
  if (p->f) return perr(p, "function @%s is not closed with '}'", p->f->name);
  return 0;
}

int kir_parse(const char *text, size_t len, kir_module_t **out, kir_diag_t *d) {
  kir_arena_t *a = kir_arena_create();
  kir_module_t *m = a ? kir_alloc(a, sizeof *m) : NULL;
  if (!m) {
    kir_arena_destroy(a);
    kir_error(d, "<kir>", 0, 0, "out of memory");
    return -1;
  }
  m->arena = a;
  m->kernel = -1;
  parser_t p = {.m = m, .a = a, .d = d, .block = -1};
  if (memchr(text, '\0', len)) {
    kir_error(d, "<kir>", 0, 0, "KIR text contains a NUL byte");
    kir_module_destroy(m);
    return -1;
  }
  if (parse_lines(&p, text, len)) {
    kir_module_destroy(m);
    return -1;
  }
  *out = m;
  return 0;
}

void kir_module_destroy(kir_module_t *m) {
  if (m) kir_arena_destroy(m->arena);
}
