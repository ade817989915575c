/* Function cloning for the finalisers (finalise_clone.cpp). Private to the compiler library. */
#ifndef KAPI_COMPILER_FINALISE_CLONE_H
#define KAPI_COMPILER_FINALISE_CLONE_H

#include <llvm-c/Core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A copy of fn named name, in fn's module, with fn's attributes and metadata. */
LLVMValueRef kc_clone_function(LLVMValueRef fn, const char *name);

#ifdef __cplusplus
}
#endif

#endif
