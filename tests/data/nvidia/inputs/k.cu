extern "C" __global__ void add_one(int *p) { p[threadIdx.x] += 1; }
extern "C" __global__ void scale(float *p, float s) { p[threadIdx.x] *= s; }
