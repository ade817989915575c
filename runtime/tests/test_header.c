/* The public header compiles on its own (this file includes nothing before it) and its
 * fixed parts keep their documented values (they mirror Level Zero enums). */
#include "kapi/runtime.h"

#include <stdio.h>

int main(void) {
  int ok = KR_DEVICE_GPU == 1 && KR_DEVICE_CPU == 2 && KR_MEM_HOST == 1 && KR_MEM_DEVICE == 2 &&
           KR_MEM_SHARED == 3 && KR_ERROR_MESSAGE_SIZE >= 1024 &&
           sizeof(kr_arg_t) == 2 * sizeof(void *);
  if (!ok) fprintf(stderr, "runtime.h constants changed\n");
  return ok ? 0 : 1;
}
