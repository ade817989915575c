// The only C++ in the compiler: SPIRV-LLVM-Translator's API behind translator.h, and the few
// LLVM C++ facts the C API lacks (the address-space remap, an x86 CPU's features).
// Options live here so forward emission and reverse reading agree on extensions and version.
#include "spirv/translator.h"

#include <LLVMSPIRVLib/LLVMSPIRVLib.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>
#include <llvm/Support/X86TargetParser.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <algorithm>
#include <map>
#include <vector>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

namespace {

char *dup_message(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

SPIRV::TranslatorOpts make_opts() {
  SPIRV::TranslatorOpts::ExtensionsStatusMap exts;
  exts[SPIRV::ExtensionID::SPV_EXT_shader_atomic_float_add] = true;
  exts[SPIRV::ExtensionID::SPV_EXT_shader_atomic_float_min_max] = true;
  exts[SPIRV::ExtensionID::SPV_INTEL_subgroups] = true; // sub-group shuffles (lower_group.c)
  SPIRV::TranslatorOpts opts(SPIRV::VersionNumber::SPIRV_1_2, exts);
  opts.setDesiredBIsRepresentation(SPIRV::BIsRepresentation::SPIRVFriendlyIR);
  return opts;
}

} // namespace

extern "C" int kc_tr_write_spirv(LLVMModuleRef module, void **spirv, size_t *nbytes, char **err) {
  try {
    std::ostringstream os;
    std::string msg;
    if (!llvm::writeSpirv(llvm::unwrap(module), make_opts(), os, msg)) {
      *err = dup_message("SPIR-V emission failed: " + msg);
      return 0;
    }
    std::string bytes = os.str();
    void *buf = std::malloc(bytes.size());
    if (!buf) {
      *err = dup_message("out of memory");
      return 0;
    }
    std::memcpy(buf, bytes.data(), bytes.size());
    *spirv = buf;
    *nbytes = bytes.size();
    return 1;
  } catch (const std::exception &e) {
    *err = dup_message(std::string("SPIR-V emission failed: ") + e.what());
    return 0;
  }
}

extern "C" int kc_tr_read_spirv(LLVMContextRef ctx, const void *spirv, size_t nbytes,
                                LLVMModuleRef *module, char **err) {
  try {
    std::istringstream is(std::string(static_cast<const char *>(spirv), nbytes));
    std::string msg;
    llvm::Module *m = nullptr;
    if (!llvm::readSpirv(*llvm::unwrap(ctx), make_opts(), is, m, msg) || !m) {
      delete m;
      *err = dup_message("SPIR-V reading failed: " + msg);
      return 0;
    }
    *module = llvm::wrap(m);
    return 1;
  } catch (const std::exception &e) {
    *err = dup_message(std::string("SPIR-V reading failed: ") + e.what());
    return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Address-space remapping (NVPTX finaliser). LLVM has no pass that changes the address space of
// a pointer type everywhere, so the module is cloned with a type remapper applied to every
// global, function signature and instruction.

namespace {

class AddrSpaceRemapper : public llvm::ValueMapTypeRemapper {
public:
  AddrSpaceRemapper(const unsigned *map, unsigned n) : map_(map, map + n) {}

  unsigned remapAS(unsigned as) const { return as < map_.size() ? map_[as] : as; }

  // An address space beyond the map (a SPIR-V storage class the target has no place for, such
  // as Input on a non-builtin variable) is kept but reported: codegen would abort on it.
  unsigned unmappedAS() const { return unmapped_; }

  llvm::Type *remapType(llvm::Type *t) override {
    auto it = cache_.find(t);
    if (it != cache_.end()) return it->second;
    llvm::Type *r = remapUncached(t);
    cache_[t] = r;
    return r;
  }

private:
  llvm::Type *remapUncached(llvm::Type *t) {
    using namespace llvm;
    if (auto *p = dyn_cast<PointerType>(t)) {
      unsigned as = remapAS(p->getAddressSpace());
      if (p->getAddressSpace() >= map_.size()) unmapped_ = p->getAddressSpace();
      if (p->isOpaque()) return PointerType::get(t->getContext(), as);
      return PointerType::get(remapType(p->getNonOpaquePointerElementType()), as);
    }
    if (auto *a = dyn_cast<ArrayType>(t))
      return ArrayType::get(remapType(a->getElementType()), a->getNumElements());
    if (auto *v = dyn_cast<VectorType>(t))
      return VectorType::get(remapType(v->getElementType()), v->getElementCount());
    if (auto *f = dyn_cast<FunctionType>(t)) {
      std::vector<Type *> params;
      for (Type *p : f->params())
        params.push_back(remapType(p));
      return FunctionType::get(remapType(f->getReturnType()), params, f->isVarArg());
    }
    if (auto *s = dyn_cast<StructType>(t)) return remapStruct(s);
    return t;
  }

  // Named structs are nominal: a struct whose fields change gets a new named type. The cache
  // entry is set before the body so that self-referencing structs terminate.
  llvm::Type *remapStruct(llvm::StructType *s) {
    using namespace llvm;
    if (s->isOpaque() || !needsRemap(s)) return s;
    StructType *r =
        s->isLiteral() ? nullptr : StructType::create(s->getContext(), s->getName().str() + ".nv");
    if (r) cache_[s] = r;
    std::vector<Type *> elems;
    for (Type *e : s->elements())
      elems.push_back(remapType(e));
    if (!r) return StructType::get(s->getContext(), elems, s->isPacked());
    r->setBody(elems, s->isPacked());
    return r;
  }

  bool needsRemap(llvm::Type *t) {
    std::vector<llvm::Type *> seen;
    return needsRemapRec(t, seen);
  }

  bool needsRemapRec(llvm::Type *t, std::vector<llvm::Type *> &seen) {
    using namespace llvm;
    if (auto *p = dyn_cast<PointerType>(t)) {
      if (remapAS(p->getAddressSpace()) != p->getAddressSpace()) return true;
      if (p->isOpaque()) return false;
      t = p->getNonOpaquePointerElementType();
      if (std::find(seen.begin(), seen.end(), t) != seen.end()) return false;
      seen.push_back(t);
      return needsRemapRec(t, seen);
    }
    for (Type *c : t->subtypes())
      if (needsRemapRec(c, seen)) return true;
    return false;
  }

  std::vector<unsigned> map_;
  std::map<llvm::Type *, llvm::Type *> cache_;
  unsigned unmapped_ = ~0u;
};

// A constant addrspacecast whose two sides land in the same address space would be invalid
// after remapping (ConstantExpr asserts on it), so such expressions are turned into
// instructions first; the instruction form is fixed after cloning.
bool has_bad_cast(llvm::Constant *c, const AddrSpaceRemapper &r) {
  auto *ce = llvm::dyn_cast<llvm::ConstantExpr>(c);
  if (!ce) return false;
  if (ce->getOpcode() == llvm::Instruction::AddrSpaceCast) {
    unsigned from = ce->getOperand(0)->getType()->getPointerAddressSpace();
    unsigned to = ce->getType()->getPointerAddressSpace();
    if (r.remapAS(from) == r.remapAS(to)) return true;
  }
  for (llvm::Value *op : ce->operands())
    if (auto *oc = llvm::dyn_cast<llvm::Constant>(op))
      if (has_bad_cast(oc, r)) return true;
  return false;
}

void expand_bad_casts(llvm::Instruction *inst, const AddrSpaceRemapper &r) {
  for (unsigned i = 0; i < inst->getNumOperands(); ++i) {
    auto *ce = llvm::dyn_cast<llvm::ConstantExpr>(inst->getOperand(i));
    if (!ce || !has_bad_cast(ce, r)) continue;
    llvm::Instruction *at = inst;
    if (auto *phi = llvm::dyn_cast<llvm::PHINode>(inst))
      at = phi->getIncomingBlock(i)->getTerminator();
    llvm::Instruction *ni = ce->getAsInstruction(at);
    inst->setOperand(i, ni);
    expand_bad_casts(ni, r);
  }
}

// After cloning, an addrspacecast within one address space becomes a bitcast.
void fix_same_space_casts(llvm::Module &m) {
  std::vector<llvm::AddrSpaceCastInst *> bad;
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : bb)
        if (auto *c = llvm::dyn_cast<llvm::AddrSpaceCastInst>(&i))
          if (c->getSrcTy()->getPointerAddressSpace() == c->getDestTy()->getPointerAddressSpace())
            bad.push_back(c);
  for (auto *c : bad) {
    llvm::Value *v = c->getOperand(0);
    if (v->getType() != c->getType()) v = new llvm::BitCastInst(v, c->getType(), "", c);
    c->replaceAllUsesWith(v);
    c->eraseFromParent();
  }
}

// Overloaded intrinsics carry pointer types in their names (llvm.memcpy.p4i8...).
void remangle_intrinsics(llvm::Module &m) {
  std::vector<llvm::Function *> fs;
  for (llvm::Function &f : m)
    if (f.isIntrinsic()) fs.push_back(&f);
  for (llvm::Function *f : fs) {
    if (auto nf = llvm::Intrinsic::remangleIntrinsicFunction(f)) {
      f->replaceAllUsesWith(*nf);
      f->eraseFromParent();
    }
  }
}

llvm::Module *clone_remapped(llvm::Module &src, AddrSpaceRemapper &tm, std::string &err) {
  using namespace llvm;
  for (GlobalVariable &g : src.globals())
    if (g.hasInitializer() && has_bad_cast(g.getInitializer(), tm)) {
      err = "global '" + g.getName().str() + "' has an initializer casting between address spaces";
      return nullptr;
    }
  for (Function &f : src)
    for (BasicBlock &bb : f)
      for (Instruction &i : bb)
        expand_bad_casts(&i, tm);

  auto *dst = new Module(src.getModuleIdentifier(), src.getContext());
  ValueToValueMapTy vmap;
  for (GlobalVariable &g : src.globals()) {
    tm.remapType(PointerType::get(g.getValueType(), g.getAddressSpace())); // checks its space
    auto *ng = new GlobalVariable(*dst, tm.remapType(g.getValueType()), g.isConstant(),
                                  g.getLinkage(), nullptr, g.getName(), nullptr,
                                  g.getThreadLocalMode(), tm.remapAS(g.getAddressSpace()));
    ng->copyAttributesFrom(&g);
    vmap[&g] = ng;
  }
  for (Function &f : src) {
    auto *ft = cast<FunctionType>(tm.remapType(f.getFunctionType()));
    Function *nf = Function::Create(ft, f.getLinkage(), f.getAddressSpace(), f.getName(), dst);
    nf->copyAttributesFrom(&f);
    vmap[&f] = nf;
  }
  if (!src.alias_empty() || !src.ifunc_empty()) {
    delete dst;
    err = "aliases are not supported";
    return nullptr;
  }
  for (GlobalVariable &g : src.globals())
    if (g.hasInitializer())
      cast<GlobalVariable>(vmap[&g])->setInitializer(
          MapValue(g.getInitializer(), vmap, RF_None, &tm));
  for (Function &f : src) {
    Function *nf = cast<Function>(vmap[&f]);
    if (f.isDeclaration()) continue;
    auto ai = nf->arg_begin();
    for (Argument &a : f.args()) {
      ai->setName(a.getName());
      vmap[&a] = &*ai++;
    }
    SmallVector<ReturnInst *, 8> rets;
    CloneFunctionInto(nf, &f, vmap, CloneFunctionChangeType::DifferentModule, rets, "", nullptr,
                      &tm);
  }
  for (NamedMDNode &md : src.named_metadata()) {
    NamedMDNode *nmd = dst->getOrInsertNamedMetadata(md.getName());
    for (MDNode *op : md.operands())
      nmd->addOperand(MapMetadata(op, vmap, RF_None, &tm));
  }
  if (tm.unmappedAS() != ~0u) {
    delete dst;
    err = "pointer in address space " + std::to_string(tm.unmappedAS()) +
          " (a SPIR-V storage class this target does not support)";
    return nullptr;
  }
  fix_same_space_casts(*dst);
  remangle_intrinsics(*dst);
  return dst;
}

} // namespace

extern "C" int kc_tr_remap_address_spaces(LLVMModuleRef module, const unsigned *map,
                                          unsigned map_len, LLVMModuleRef *out, char **err) {
  try {
    AddrSpaceRemapper tm(map, map_len);
    std::string msg;
    llvm::Module *m = clone_remapped(*llvm::unwrap(module), tm, msg);
    if (!m) {
      *err = dup_message("address-space remapping failed: " + msg);
      return 0;
    }
    m->setTargetTriple(llvm::unwrap(module)->getTargetTriple());
    m->setDataLayout(llvm::unwrap(module)->getDataLayout());
    *out = llvm::wrap(m);
    return 1;
  } catch (const std::exception &e) {
    *err = dup_message(std::string("address-space remapping failed: ") + e.what());
    return 0;
  }
}

// LLVM's own table of x86 CPUs (what clang -march= accepts), so a CPU name is checked before the
// target machine sees it: LLVM prints a warning and ignores a name it does not know.
extern "C" void kc_tr_set_fast_math(LLVMValueRef inst, unsigned flags) {
  auto *I = llvm::dyn_cast_or_null<llvm::Instruction>(llvm::unwrap(inst));
  if (!I || !llvm::isa<llvm::FPMathOperator>(I)) return;
  llvm::FastMathFlags f;
  f.setNoNaNs(flags & 1);
  f.setNoInfs(flags & 2);
  f.setNoSignedZeros(flags & 4);
  f.setAllowReciprocal(flags & 8);
  f.setAllowContract(flags & 16);
  f.setApproxFunc(flags & 32);
  f.setAllowReassoc(flags & 64);
  I->setFastMathFlags(f);
}

extern "C" char *kc_tr_x86_cpu_features(const char *cpu) {
  if (!cpu || llvm::X86::parseArchX86(cpu, /*Only64Bit=*/true) == llvm::X86::CK_None)
    return nullptr;
  llvm::SmallVector<llvm::StringRef, 96> features;
  llvm::X86::getFeaturesForCPU(cpu, features);
  std::string out;
  for (llvm::StringRef f : features)
    out += (out.empty() ? "+" : ",+") + f.str();
  return dup_message(out);
}
