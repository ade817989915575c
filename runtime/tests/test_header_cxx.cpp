// The public header also compiles as C++ on its own (extern "C", no C-only constructs).
#include "kapi/runtime.h"

int main() {
  kr_error_t err{};
  return kr_status_name(KR_OK)[0] == 'K' && err.status == KR_OK ? 0 : 1;
}
