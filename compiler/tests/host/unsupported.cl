// A builtin the host finaliser does not implement (printf): finalisation fails with a status.
kernel void prints(global int *x) { printf("%d\n", x[get_global_id(0)]); }
