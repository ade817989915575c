// A builtin the host finaliser does not implement (prefetch): finalisation fails with a status.
kernel void prefetches(global int *x) { prefetch(x, 4); x[get_global_id(0)] = 1; }
