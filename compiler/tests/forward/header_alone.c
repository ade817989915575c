/* compiler.h compiles on its own (it is the first and only include) and its C API links. */
#include "kapi/compiler.h"

int main(void) {
  kc_options_t o;
  kc_options_init(&o);
  kc_free(NULL);
  return o.opt_level == 2 && kc_status_name(KC_ERR_KIR)[0] == 'K' ? 0 : 1;
}
