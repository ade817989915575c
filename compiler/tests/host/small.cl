// Small fixture for the valgrind run: a barrier-free kernel and one with barriers, a __local
// array and a private array (fibers), so both execution schemes run under valgrind.
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
