// Small fixture for the valgrind run: a barrier-free kernel (the work-item loop), one with
// barriers, a __local array and a private array (regions), and one spinning on an atomic load
// (fibers), so every execution scheme runs under valgrind.
kernel void scale(global float *y, float a) { y[get_global_id(0)] *= a; }

kernel void group_sum(global int *out, global const int *in) {
  local int buf[64];
  int priv[4];
  size_t l = get_local_id(0), n = get_local_size(0);
  for (int k = 0; k < 4; k++) priv[k] = in[get_global_id(0)] + k;
  buf[l] = priv[l % 4];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    int s = 0;
    for (size_t i = 0; i < n; i++) s += buf[i];
    out[get_group_id(0)] = s;
  }
}

// Work-item 0 waits for work-item 1: only completes with forward progress within the group.
kernel void handshake(global atomic_int *flag, global int *out) {
  if (get_local_id(0) == 0) {
    while (atomic_load_explicit(flag, memory_order_acquire, memory_scope_device) == 0)
      ;
    out[0] = out[1] + 1;
  } else {
    out[1] = 41;
    atomic_store_explicit(flag, 1, memory_order_release, memory_scope_device);
  }
}
