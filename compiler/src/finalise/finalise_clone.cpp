/* What both finalisers need of LLVM beyond its C API: a copy of a function, in the same module
 * (the NVPTX finaliser's aligned entries, the host finaliser's streaming entries). */
#include "finalise/finalise_clone.h"

#include <llvm/IR/Function.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

extern "C" LLVMValueRef kc_clone_function(LLVMValueRef fn, const char *name) {
  llvm::Function *f = llvm::unwrap<llvm::Function>(fn);
  llvm::ValueToValueMapTy map;
  llvm::Function *copy = llvm::CloneFunction(f, map);
  copy->setName(name);
  return llvm::wrap(copy);
}
