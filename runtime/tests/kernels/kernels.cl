/* OpenCL C fixtures for the runtime tests, compiled at build time by clang-15 and
 * llvm-spirv-15 into one SPIR-V module (kernels.spv), independent of kapi's own compiler. */

kernel void empty(void) {}

kernel void triad(global float *a, global const float *b, global const float *c, float s) {
  size_t i = get_global_id(0);
  a[i] = b[i] + s * c[i];
}

/* out[linear id] = linear id + 1, with the x index fastest, over a 1-3D range; also records
 * the local size seen by work-item 0. */
kernel void index3(global uint *out, global uint *local_size) {
  size_t x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  size_t nx = get_global_size(0), ny = get_global_size(1);
  size_t lin = x + nx * (y + ny * z);
  out[lin] = (uint)lin + 1u;
  if (lin == 0) {
    local_size[0] = (uint)get_local_size(0);
    local_size[1] = (uint)get_local_size(1);
    local_size[2] = (uint)get_local_size(2);
  }
}

/* Sum of each work-group's elements through local memory given at launch. */
kernel void group_sum(global const int *in, global int *out, local int *scratch) {
  size_t l = get_local_id(0), n = get_local_size(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    int s = 0;
    for (size_t i = 0; i < n; i++) s += scratch[i];
    out[get_group_id(0)] = s;
  }
}

kernel void add_one(global int *a) { a[get_global_id(0)] += 1; }
