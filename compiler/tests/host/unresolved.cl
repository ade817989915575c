// A kernel calling a function no library defines: finalisation must fail cleanly.
float kapi_no_such_function(float x);
kernel void calls_missing(global float *y) { y[0] = kapi_no_such_function(y[1]); }
