/* NVPTX finaliser: what finalise_nvptx_align.c needs of LLVM beyond its C API: raising a
 * function's memory accesses' alignments to what their addresses show. (Cloning a function,
 * which both finalisers need, is finalise_clone.cpp's.) */
#include <llvm-c/Core.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Local.h>

/* Each load and store of fn gets the alignment its address is known to have (argument
 * alignments, constant offsets, index multiples: LLVM's known bits), up to max bytes.
 * LLVM 15's load-store vectoriser trusts an access's own alignment outside the stack, and
 * instcombine raises it only to the accessed type's own. Returns how many global (address
 * space 1) accesses are now aligned to twice their size or more: where a vector could
 * start. */
static unsigned raise(llvm::Instruction *i, llvm::Value *ptr, llvm::Type *t, llvm::Align cur,
                      const llvm::DataLayout &dl, unsigned max) {
  llvm::Align a = llvm::getKnownAlignment(ptr, dl, i);
  if (a.value() > max) a = llvm::Align(max);
  if (a > cur) {
    if (auto *ld = llvm::dyn_cast<llvm::LoadInst>(i))
      ld->setAlignment(a);
    else
      llvm::cast<llvm::StoreInst>(i)->setAlignment(a);
  }
  uint64_t size = dl.getTypeStoreSize(t).getFixedSize();
  return ptr->getType()->getPointerAddressSpace() == 1 && size && a.value() >= 2 * size;
}

extern "C" unsigned kc_nvptx_raise_alignments(LLVMValueRef fn, unsigned max) {
  llvm::Function *f = llvm::unwrap<llvm::Function>(fn);
  const llvm::DataLayout &dl = f->getParent()->getDataLayout();
  unsigned starts = 0;
  for (llvm::Instruction &i : llvm::instructions(*f)) {
    if (auto *ld = llvm::dyn_cast<llvm::LoadInst>(&i))
      starts += raise(ld, ld->getPointerOperand(), ld->getType(), ld->getAlign(), dl, max);
    else if (auto *st = llvm::dyn_cast<llvm::StoreInst>(&i))
      starts += raise(st, st->getPointerOperand(), st->getValueOperand()->getType(), st->getAlign(),
                      dl, max);
  }
  return starts;
}
