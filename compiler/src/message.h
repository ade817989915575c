/* The compiler's one formatter for messages it hands out (errors, build logs). Private to
 * compiler/; what it returns is freed with kc_free. */
#ifndef KAPI_COMPILER_MESSAGE_H
#define KAPI_COMPILER_MESSAGE_H

#include <stdarg.h>

/* printf into a malloc'd string; NULL when out of memory. */
char *kc_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *kc_vmsg(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
