// The only C++ in the compiler: SPIRV-LLVM-Translator's API behind translator.h.
// Options live here so forward emission and reverse reading agree on extensions and version.
#include "translator.h"

#include <LLVMSPIRVLib/LLVMSPIRVLib.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

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
