/* Lowering KIR to LLVM IR: the state shared by lower*.c. lower.c drives (module, functions,
 * blocks) and dispatches each instruction to the file of its concern. Lowering runs only on
 * verified KIR, so its functions trust types and arities. Private to compiler/.
 */
#ifndef KAPI_COMPILER_LOWER_H
#define KAPI_COMPILER_LOWER_H

#include "kir/kir.h"

/* The kernel's string attribute that carries KIR's max_registers to SPIR-V emission. */
#define KC_MAX_REGISTERS_ATTR "kapi-max-registers"
/* The kernel's string attribute that marks fastmath=True (KIR `fastmath fast`), which flushes
 * float32 denormals to zero where a device can (carried by SPIR-V emission). */
#define KC_FLUSH_DENORMALS_ATTR "kapi-flush-denormals"

#include <llvm-c/Core.h>

/* SPIR address spaces (docs/kir.md: every pointer has a known one; never generic). */
enum { KC_AS_PRIVATE = 0, KC_AS_GLOBAL = 1, KC_AS_LOCAL = 3 };

/* SPIR-V Scope and MemorySemantics values. */
enum {
  KC_SCOPE_CROSS_DEVICE = 0,
  KC_SCOPE_DEVICE = 1,
  KC_SCOPE_WORKGROUP = 2,
  KC_SCOPE_SUBGROUP = 3,
  KC_SCOPE_INVOCATION = 4,
  KC_SEM_ACQUIRE = 0x2,
  KC_SEM_RELEASE = 0x4,
  KC_SEM_ACQ_REL = 0x8,
  KC_SEM_SEQ_CST = 0x10,
  KC_SEM_WORKGROUP_MEMORY = 0x100,
  KC_SEM_CROSS_WORKGROUP_MEMORY = 0x200,
};

/* A lowered KIR value: a scalar, or an array as its data pointer plus extents and strides. */
/* The most LLVM parameters one KIR parameter becomes: an array's pointer, extents, strides. */
#define KC_MAX_PARAM_PARTS (1 + 2 * KIR_MAX_NDIM)

typedef struct kc_val {
  LLVMValueRef v;
  LLVMValueRef ext[KIR_MAX_NDIM], str[KIR_MAX_NDIM];
} kc_val_t;

typedef struct kc_lower {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  const kir_module_t *m;
  kir_diag_t *d;
  LLVMValueRef *fns; /* per KIR function */
  /* the function being lowered */
  const kir_func_t *f;
  LLVMValueRef fn;
  kc_val_t *vals;            /* per KIR value */
  LLVMValueRef *slots;       /* per variable slot: its alloca */
  LLVMBasicBlockRef *blocks; /* per KIR block; NULL when unreachable */
  LLVMBasicBlockRef entry;   /* allocas and parameter unpacking */
  LLVMTypeRef i1, i8, i32, i64, f32, f64, void_t;
  char *may_raise;     /* per KIR function: takes the status buffer (lower_raise.c) */
  LLVMValueRef status; /* the current function's status buffer, or NULL */
} kc_lower_t;

/* lower.c */
int kc_lower_module(LLVMContextRef ctx, const kir_module_t *m, LLVMModuleRef *out, kir_diag_t *d);
LLVMTypeRef kc_scalar_type(kc_lower_t *L, kir_kind_t k); /* bool -> i1 */
LLVMTypeRef kc_mem_type(kc_lower_t *L, kir_kind_t k);    /* bool -> i8 (arrays, kernel args) */
unsigned kc_addrspace(kir_space_t s);
LLVMValueRef kc_arg(kc_lower_t *L, const kir_inst_t *in, int k);
kc_val_t *kc_arg_val(kc_lower_t *L, const kir_inst_t *in, int k);
kir_type_t kc_arg_type(kc_lower_t *L, const kir_inst_t *in, int k);
void kc_set_result(kc_lower_t *L, const kir_inst_t *in, LLVMValueRef v);
/* Attributes of every function we define (nounwind, convergent, no-builtins). */
void kc_set_fn_attrs(kc_lower_t *L, LLVMValueRef fn);
/* A new block in the current function, placed after the builder's current block. */
LLVMBasicBlockRef kc_new_block(kc_lower_t *L, const char *name);

/* lower_builtins.c: declarations of builtins and the index space, barrier */
/* What a builtin may do, for the optimiser: nothing but compute (index queries, math), touch
 * memory (atomics, fences), or synchronise work-items (barriers: never made control-dependent
 * on anything new). */
typedef enum kc_builtin_kind {
  KC_BUILTIN_PURE,
  KC_BUILTIN_MEMORY,
  KC_BUILTIN_CONVERGENT
} kc_builtin_kind_t;
/* Declares (once) a builtin with the given signature. */
LLVMValueRef kc_declare(kc_lower_t *L, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                        unsigned n, kc_builtin_kind_t kind);
LLVMValueRef kc_call(kc_lower_t *L, LLVMValueRef fn, LLVMValueRef *args, unsigned n);
/* Itanium code of a scalar kind for mangling (i, j, l, m, f, d...). */
const char *kc_mangle_code(kir_kind_t k);
int kc_lower_index_space(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_barrier(kc_lower_t *L, const kir_inst_t *in);

/* lower_group.c: sub-group queries, shuffles and barriers; sub-group and work-group
 * broadcasts, reductions, scans and votes */
int kc_lower_sub_group_query(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_group(kc_lower_t *L, const kir_inst_t *in);

/* lower_arith.c */
int kc_lower_const(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_cast(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_select(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_binary(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_unary(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_cmp(kc_lower_t *L, const kir_inst_t *in);
LLVMValueRef kc_convert(kc_lower_t *L, LLVMValueRef v, kir_kind_t from, kir_kind_t to);
/* v with the current function's fast-math flags (KIR `fastmath`) when it is a float operation
 * (SPIR-V emission writes them as FPFastMathMode decorations where SPIR-V 1.0 has the flag). */
LLVMValueRef kc_fast_math(kc_lower_t *L, LLVMValueRef v);

/* lower_pydiv.c: Python's floor division, modulo and integer power */
LLVMValueRef kc_floordiv(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef kc_mod(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef kc_ipow(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b);

/* lower_math.c */
int kc_lower_math(kc_lower_t *L, const kir_inst_t *in);
/* __spirv_ocl_NAME for f32/f64 with n operands. */
LLVMValueRef kc_ocl_call(kc_lower_t *L, const char *name, kir_kind_t k, LLVMValueRef *args,
                         unsigned n);

/* lower_memory.c: kernel ABI, slots, arrays */
/* LLVM parameter types of a KIR parameter (kernel ABI or device function ABI); returns count. */
unsigned kc_param_types(kc_lower_t *L, kir_type_t t, int kernel, LLVMTypeRef *out);
void kc_unpack_params(kc_lower_t *L);
void kc_create_slots(kc_lower_t *L);
int kc_lower_var(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_array_op(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_private_array(kc_lower_t *L, const kir_inst_t *in);
/* Address of the element at index operands first.. of in (array operand 0). */
LLVMValueRef kc_element_ptr(kc_lower_t *L, const kir_inst_t *in, int first);
/* Appends an array's pointer, extents and strides to a call's arguments. */
unsigned kc_array_call_args(kc_lower_t *L, const kc_val_t *a, kir_type_t t, LLVMValueRef *out);

/* lower_control.c */
int kc_lower_control(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_call(kc_lower_t *L, const kir_inst_t *in);

/* lower_print.c */
int kc_lower_print(kc_lower_t *L, const kir_inst_t *in);

/* lower_raise.c: assert/raise through a hidden status-buffer parameter */
LLVMTypeRef kc_status_type(kc_lower_t *L);
int kc_may_raise(const kir_module_t *m, char *may);
int kc_lower_raise(kc_lower_t *L, const kir_inst_t *in);
void kc_after_raising_call(kc_lower_t *L);

/* lower_atomic.c */
int kc_lower_atomic(kc_lower_t *L, const kir_inst_t *in);
int kc_lower_fence(kc_lower_t *L, const kir_inst_t *in);

#endif
