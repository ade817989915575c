/* KIR in memory: the structures the parser builds, the verifier checks and the lowering reads.
 * Private to compiler/ (the public contract is KIR text, docs/kir.md). Everything of one module
 * lives in one arena, freed at once by kir_module_destroy.
 */
#ifndef KAPI_COMPILER_KIR_H
#define KAPI_COMPILER_KIR_H

#include <stddef.h>
#include <stdint.h>

/* ---- arena --------------------------------------------------------------------------- */

typedef struct kir_arena kir_arena_t;

kir_arena_t *kir_arena_create(void);
void kir_arena_destroy(kir_arena_t *a);
/* Zeroed memory; NULL only when out of memory. */
void *kir_alloc(kir_arena_t *a, size_t n);
char *kir_strndup(kir_arena_t *a, const char *s, size_t n);
/* Appends one element of size elt to a growable array (*data, *len, *cap) in the arena. */
void *kir_push(kir_arena_t *a, void *data_ptr, int *len, int *cap, size_t elt);

/* ---- types --------------------------------------------------------------------------- */

typedef enum kir_kind {
  KIR_VOID,
  KIR_BOOL,
  KIR_I8,
  KIR_I16,
  KIR_I32,
  KIR_I64,
  KIR_U8,
  KIR_U16,
  KIR_U32,
  KIR_U64,
  KIR_F32,
  KIR_F64,
  KIR_F16, /* IEEE half: arithmetic native where the target has it, math through f32 */
  KIR_ARRAY,
} kir_kind_t;

typedef enum kir_layout { KIR_LAYOUT_C, KIR_LAYOUT_F, KIR_LAYOUT_A } kir_layout_t;
typedef enum kir_space { KIR_GLOBAL, KIR_LOCAL, KIR_PRIVATE } kir_space_t;

/* The most dimensions of a global array (a kernel argument). */
#define KIR_MAX_NDIM 8

typedef struct kir_type {
  uint8_t kind;   /* kir_kind_t */
  uint8_t elem;   /* arrays: scalar element kind */
  uint8_t ndim;   /* arrays: 1..KIR_MAX_NDIM (local and private arrays: 1..3) */
  uint8_t layout; /* arrays: kir_layout_t */
  uint8_t space;  /* arrays: kir_space_t */
  /* arrays: static extents (all 0 = run-time extents). Local arrays may fix their shape in the
   * type so that indexing uses constants; the kernel ABI still passes the extents. */
  uint32_t shape[3];
} kir_type_t;

#define KIR_TYPE_STR_MAX 64 /* buffer size for kir_type_str */
#define KIR_MAX_STATIC_EXTENT (1u << 20)
/* The range of a kernel's max_registers (ptxas's: -maxrregcount / .maxnreg). */
#define KIR_MIN_REGISTERS 16
#define KIR_MAX_REGISTERS 255
/* The largest extent of a kernel's group_size in one dimension. */
#define KIR_MAX_GROUP_SIZE 65536
/* A function's fast-math flags (KIR `fastmath FLAG...`): LLVM's, one bit each; `fast` is all. */
typedef enum kir_fastmath {
  KIR_FM_NNAN = 1,
  KIR_FM_NINF = 2,
  KIR_FM_NSZ = 4,
  KIR_FM_ARCP = 8,
  KIR_FM_CONTRACT = 16,
  KIR_FM_AFN = 32,
  KIR_FM_REASSOC = 64,
  KIR_FM_FAST = 127
} kir_fastmath_t;
int kir_type_is_static(kir_type_t t);

int kir_type_eq(kir_type_t a, kir_type_t b);
int kir_is_int(kir_kind_t k);
int kir_is_signed(kir_kind_t k);
int kir_is_float(kir_kind_t k);
int kir_is_scalar(kir_kind_t k); /* bool, ints, floats */
int kir_bits(kir_kind_t k);      /* bool 1 */
/* Writes the KIR spelling of t into buf (at least 40 bytes); returns buf. */
const char *kir_type_str(kir_type_t t, char *buf);
/* Scalar kind from its name, or -1. */
int kir_scalar_kind(const char *name);

/* ---- instructions -------------------------------------------------------------------- */

/* One row per op, as a table. */
/* clang-format off */
#define KIR_OPS(X) \
  X(CONST, "const", "TL")                        \
  X(LOAD_VAR, "load_var", "TV")                  \
  X(STORE_VAR, "store_var", "Vv")                \
  X(CAST, "cast", "Tv")                          \
  X(BITCAST, "bitcast", "Tv")                    \
  X(SELECT, "select", "Tvvv")                    \
  X(ADD, "add", "Tvv")                           \
  X(SUB, "sub", "Tvv")                           \
  X(MUL, "mul", "Tvv")                           \
  X(DIV, "div", "Tvv")                           \
  X(FLOORDIV, "floordiv", "Tvv")                 \
  X(MOD, "mod", "Tvv")                           \
  X(POW, "pow", "Tvv")                           \
  X(NEG, "neg", "Tv")                            \
  X(ABS, "abs", "Tv")                            \
  X(MIN, "min", "Tvv")                           \
  X(MAX, "max", "Tvv")                           \
  X(AND, "and", "Tvv")                           \
  X(OR, "or", "Tvv")                             \
  X(XOR, "xor", "Tvv")                           \
  X(NOT, "not", "Tv")                            \
  X(POPCOUNT, "popcount", "Tv")                  \
  X(SHL, "shl", "Tvv")                           \
  X(SHR, "shr", "Tvv")                           \
  X(CMP, "cmp", "Tpvv")                          \
  X(MATH, "math", "Tm*")                         \
  X(ALOAD, "aload", "Tv*")                       \
  X(ASTORE, "astore", "vv*")                     \
  X(ASTORE_NT, "astore_nt", "vv*")               \
  X(DIM, "dim", "Tvd")                           \
  X(STRIDE, "stride", "Tvd")                     \
  X(WRAPIDX, "wrapidx", "Tvdv")                  \
  X(PRIVATE_ARRAY, "private_array", "TfD")       \
  X(ATOMIC_RMW, "atomic_rmw", "ToOSvv*")         \
  X(ATOMIC_CMPXCHG, "atomic_cmpxchg", "TOSvvv*") \
  X(ATOMIC_LOAD, "atomic_load", "TOSv*")         \
  X(ATOMIC_STORE, "atomic_store", "OSvv*")       \
  X(FENCE, "fence", "OS")                        \
  X(GLOBAL_ID, "global_id", "Td")                \
  X(GLOBAL_RANGE, "global_range", "Td")          \
  X(LOCAL_ID, "local_id", "Td")                  \
  X(LOCAL_RANGE, "local_range", "Td")            \
  X(GROUP_ID, "group_id", "Td")                  \
  X(GROUP_RANGE, "group_range", "Td")            \
  X(BARRIER, "barrier", "S")                     \
  X(SG_LOCAL_ID, "sg_local_id", "T")             \
  X(SG_LOCAL_RANGE, "sg_local_range", "T")       \
  X(SG_MAX_RANGE, "sg_max_range", "T")           \
  X(SG_GROUP_ID, "sg_group_id", "T")             \
  X(SG_GROUP_RANGE, "sg_group_range", "T")       \
  X(SG_BARRIER, "sg_barrier", "")                \
  X(SG_SHUFFLE, "sg_shuffle", "Tvv")             \
  X(SG_SHUFFLE_DOWN, "sg_shuffle_down", "Tvv")   \
  X(SG_SHUFFLE_UP, "sg_shuffle_up", "Tvv")       \
  X(SG_SHUFFLE_XOR, "sg_shuffle_xor", "Tvv")     \
  X(GROUP_BROADCAST, "group_broadcast", "TSvv")  \
  X(GROUP_REDUCE, "group_reduce", "TgSv")        \
  X(GROUP_INCLUSIVE_SCAN, "group_inclusive_scan", "TgSv") \
  X(GROUP_EXCLUSIVE_SCAN, "group_exclusive_scan", "TgSv") \
  X(GROUP_ANY, "group_any", "TSv")               \
  X(GROUP_ALL, "group_all", "TSv")               \
  X(BR, "br", "b")                               \
  X(CBR, "cbr", "vbb")                           \
  X(RET, "ret", "?")                             \
  X(UNREACHABLE, "unreachable", "")              \
  X(CALL, "call", "T@*")                         \
  X(PRINT, "print", "s*")                        \
  X(RAISE, "raise", "d*")
/* clang-format on */

typedef enum kir_op {
#define KIR_OP_ENUM(e, name, spec) KIR_OP_##e,
  KIR_OPS(KIR_OP_ENUM)
#undef KIR_OP_ENUM
      KIR_OP_COUNT
} kir_op_t;

/* `raise N v...` records up to this many i64 values for the host's message (docs/kir.md). */
#define KIR_RAISE_VALUES 2

/* Operand grammar of an op (see kir_parse.c): T type, v value, V slot, d literal int, b block,
 * p predicate, m math name, o rmw op, g group op, O order, S scope, f fill, L constant, @ function,
 * * the remaining values, D the remaining literal ints, ? an optional value, s a string. */
const char *kir_op_name(kir_op_t op);
const char *kir_op_spec(kir_op_t op);
int kir_op_lookup(const char *name); /* -1 if unknown */
int kir_op_is_terminator(kir_op_t op);

typedef enum kir_pred { KIR_EQ, KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE } kir_pred_t;
typedef enum kir_rmw {
  KIR_RMW_ADD,
  KIR_RMW_SUB,
  KIR_RMW_MIN,
  KIR_RMW_MAX,
  KIR_RMW_AND,
  KIR_RMW_OR,
  KIR_RMW_XOR,
  KIR_RMW_XCHG
} kir_rmw_t;
typedef enum kir_order {
  KIR_RELAXED,
  KIR_ACQUIRE,
  KIR_RELEASE,
  KIR_ACQ_REL,
  KIR_SEQ_CST
} kir_order_t;
typedef enum kir_scope {
  KIR_WORK_ITEM,
  KIR_SUB_GROUP,
  KIR_WORK_GROUP,
  KIR_DEVICE,
  KIR_SYSTEM
} kir_scope_t;
typedef enum kir_fill { KIR_FILL_ZERO, KIR_FILL_UNDEF } kir_fill_t;
/* Combining operation of group reductions and scans. */
typedef enum kir_group_op {
  KIR_GROUP_ADD,
  KIR_GROUP_MUL,
  KIR_GROUP_MIN,
  KIR_GROUP_MAX,
  KIR_GROUP_AND,
  KIR_GROUP_OR,
  KIR_GROUP_XOR
} kir_group_op_t;

/* Math functions: the first KIR_MATH_BINARY_FIRST are unary, then binary, then predicates. */
/* clang-format off */
#define KIR_MATH_FUNCS(X) \
  X(SQRT, "sqrt") X(EXP, "exp") X(EXPM1, "expm1") X(LOG, "log") X(LOG1P, "log1p") X(LOG2, "log2")           \
  X(LOG10, "log10") X(SIN, "sin") X(COS, "cos") X(TAN, "tan") X(ASIN, "asin") X(ACOS, "acos")               \
  X(ATAN, "atan") X(SINH, "sinh") X(COSH, "cosh") X(TANH, "tanh") X(ASINH, "asinh") X(ACOSH, "acosh")       \
  X(ATANH, "atanh") X(FABS, "fabs") X(FLOOR, "floor") X(CEIL, "ceil") X(TRUNC, "trunc") X(ERF, "erf")       \
  X(ERFC, "erfc") X(LGAMMA, "lgamma") X(TGAMMA, "tgamma") X(ATAN2, "atan2") X(POW, "pow") X(FMOD, "fmod") X(HYPOT, "hypot") X(COPYSIGN, "copysign") X(LDEXP, "ldexp") \
  X(ISNAN, "isnan") X(ISINF, "isinf") X(ISFINITE, "isfinite")
/* clang-format on */

typedef enum kir_math {
#define KIR_MATH_ENUM(e, name) KIR_MATH_##e,
  KIR_MATH_FUNCS(KIR_MATH_ENUM)
#undef KIR_MATH_ENUM
      KIR_MATH_COUNT
} kir_math_t;
#define KIR_MATH_BINARY_FIRST KIR_MATH_ATAN2
#define KIR_MATH_PREDICATE_FIRST KIR_MATH_ISNAN
const char *kir_math_name(kir_math_t m);

/* Keyword tables (index = enum value); kir_word_lookup returns the index or -1. */
extern const char *const kir_math_names[];
extern const char *const kir_pred_names[];
extern const char *const kir_rmw_names[];
extern const char *const kir_order_names[];
extern const char *const kir_scope_names[];
extern const char *const kir_fill_names[];
extern const char *const kir_group_op_names[];
int kir_word_lookup(const char *const *table, const char *word);

typedef struct kir_inst {
  kir_op_t op;
  int result;      /* value index, or -1 */
  kir_type_t type; /* result type (void when the op has none) */
  int sub;         /* predicate, math function, rmw op or fill */
  int order, scope;
  int64_t lits[3]; /* dimension literal, or private array shape */
  int nlits;
  union {
    int64_t i; /* integer and bool constants (as bits) */
    double f;
  } cval;
  int *args; /* value indices */
  int nargs;
  int var;                 /* slot index */
  int targets[2];          /* block indices */
  int callee;              /* function index */
  const char *callee_name; /* until resolved */
  const char *str;         /* print: its template (docs/kir.md) */
  int line;                /* source line (#N), 0 if none */
  int text_line;           /* line in the KIR text */
} kir_inst_t;

typedef struct kir_block {
  const char *name;
  kir_inst_t *insts;
  int ninsts, cap;
  int defined;   /* a label was seen (not only a reference) */
  int text_line; /* first reference or label */
} kir_block_t;

typedef struct kir_value {
  const char *name;
  kir_type_t type;
  int param;       /* parameter index, or -1 */
  int block, inst; /* defining instruction, or -1 */
  int use_line, use_text_line;
} kir_value_t;

typedef struct kir_var {
  const char *name;
  kir_type_t type;
} kir_var_t;

typedef struct kir_func {
  const char *name;
  const char *file;
  int line, text_line;
  int is_kernel;
  int max_registers; /* kernel attribute: a cap on registers per work-item, 0 for none */
  int group_size[3]; /* kernel attribute: the work-group size it must run with, zeros if any */
  unsigned fastmath; /* kir_fastmath_t bits: what float arithmetic and math may assume */
  kir_type_t ret;
  int *params; /* value indices */
  int nparams, params_cap;
  kir_var_t *vars;
  int nvars, vars_cap;
  kir_block_t *blocks;
  int nblocks, blocks_cap;
  kir_value_t *values;
  int nvalues, values_cap;
} kir_func_t;

typedef struct kir_module {
  kir_arena_t *arena;
  kir_func_t *funcs;
  int nfuncs, funcs_cap;
  int kernel; /* function index of the kernel */
} kir_module_t;

/* ---- phases -------------------------------------------------------------------------- */

/* Error sink: the first error wins; messages read "file:line: error: ...". */
typedef struct kir_diag {
  char *msg; /* malloc'd */
} kir_diag_t;

void kir_error(kir_diag_t *d, const char *file, int line, int text_line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Reports at an instruction of f (its #line, else the function's line). Returns -1. */
int kir_inst_error(kir_diag_t *d, const kir_func_t *f, const kir_inst_t *in, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Tokens of one KIR line (kir_lex.c). */
typedef enum kir_tok_kind {
  KIR_TOK_WORD,   /* bare word: keyword, type name, number */
  KIR_TOK_VALUE,  /* %name */
  KIR_TOK_VAR,    /* $name */
  KIR_TOK_BLOCK,  /* ^name */
  KIR_TOK_FUNC,   /* @name */
  KIR_TOK_LINE,   /* #N */
  KIR_TOK_STRING, /* "..." (unescaped) */
  KIR_TOK_PUNCT,  /* ( ) { } : = -> */
} kir_tok_kind_t;

typedef struct kir_tok {
  kir_tok_kind_t kind;
  const char *text; /* NUL-terminated, in the arena; names without their sigil */
} kir_tok_t;

/* Splits one line (without its newline) into tokens. Returns the count, or -1 with *bad set to
 * a description of the offending character. */
int kir_lex_line(kir_arena_t *a, const char *line, size_t len, kir_tok_t **toks, const char **bad);

/* Parses KIR text into *out (verified separately). Returns 0, or -1 with d->msg set. */
int kir_parse(const char *text, size_t len, kir_module_t **out, kir_diag_t *d);
/* Checks types, terminators, dominance, calls and recursion. Returns 0 or -1. */
int kir_verify(kir_module_t *m, kir_diag_t *d);
/* Type rules of one instruction (kir_verify_ops.c). Returns 0 or -1. */
int kir_verify_inst(const kir_module_t *m, const kir_func_t *f, const kir_inst_t *in,
                    kir_diag_t *d);
/* Control-flow facts of a function (kir_cfg.c). reachable[] and idom[] have nblocks entries. */
int kir_cfg_reachable(const kir_func_t *f, char *reachable);
int kir_cfg_dominates(const kir_func_t *f, const int *idom, int a, int b);
int kir_cfg_idoms(const kir_func_t *f, int *idom); /* -1 for unreachable blocks */
/* Rejects call cycles. Returns 0 or -1. */
int kir_check_recursion(const kir_module_t *m, kir_diag_t *d);
void kir_module_destroy(kir_module_t *m);

#endif
