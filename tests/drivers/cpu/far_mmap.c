/* Test helper (LD_PRELOAD): spreads small anonymous read-write mappings over two regions 64 TiB
 * apart, alternately, so that two sections the JIT maps separately (code, read-only data) are
 * never within 2 GiB of each other. A crowded address space does this now and then (the CPU
 * device's rare crash on a 32-core host); here it happens every time: any 32-bit offset from one
 * section of a kernel object to another then sends the kernel to a wild address.
 * Only mmap calls without MAP_FIXED get a hint (which the kernel may ignore): nothing that asked
 * for an address is moved. Built by tests/drivers/cpu/test_cpu_jit_layout.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static unsigned long calls;

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (!real_mmap)
    real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
  if (fd == -1 && (flags & MAP_ANONYMOUS) && !(flags & (MAP_FIXED | MAP_NORESERVE)) &&
      prot == (PROT_READ | PROT_WRITE) && len <= (1u << 20)) {
    unsigned long k = __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    uintptr_t base = (k & 1) ? 0x100000000000ull : 0x500000000000ull;
    addr = (void *)(base + (k >> 1) * (2ull << 20));
  }
  return real_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}
