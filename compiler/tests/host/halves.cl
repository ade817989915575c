// Conversions to and from half (host_test.c test_halves): on x86 without AVX512-FP16, double ->
// half is a call to compiler-rt's __truncdfhf2, and without F16C every half conversion is a call
// (__truncsfhf2, __extendhfsf2), which the JIT binds to the finaliser's own (finalise_host_rt.c).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

kernel void halves(global half *from_d, global half *from_f, global float *back_f,
                   global double *back_d, global const double *d, global const float *f) {
  size_t i = get_global_id(0);
  half hd = (half)d[i], hf = (half)f[i];
  from_d[i] = hd;
  from_f[i] = hf;
  back_f[i] = (float)hd;
  back_d[i] = (double)hf;
}
