/* The device-side declarations of tests/interop/wrap_fatbin.py's clang-built
 * host objects: clang 22 compiles this as CUDA (-x cuda) and as HIP (-x hip),
 * host side only (--cuda-host-only), with no CUDA or ROCm headers, and emits
 * one 56-byte offload entry per kernel and device variable. What the headers
 * would declare is written out here (the surface and texture templates as in
 * clang's own CodeGenCUDA tests). wrap_clang_host.c names the symbols each
 * entry must point at. */
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __constant__ __attribute__((constant))

struct surfaceReference {
  int desc;
};
template <typename T, int dim = 1>
struct __attribute__((device_builtin_surface_type)) surface : public surfaceReference {};
struct textureReference {
  int desc;
};
enum ReadMode { ElementType = 0, NormalizedFloat = 1 };
template <typename T, int dim = 1, enum ReadMode mode = ElementType>
struct __attribute__((device_builtin_texture_type)) texture : public textureReference {};

#ifdef __HIP__
struct dim3 {
  unsigned x, y, z;
};
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, hipStream_t s);
#endif

__global__ void kernel_a(int *x, int n) {}
__device__ int var_x[4];
__constant__ int const_y = 5;
extern __device__ int extern_z;  // declared only: no entry
#ifdef __HIP__
__attribute__((managed)) int managed_m = 3;  // CUDA: clang ignores the attribute
#endif
surface<void, 2> surf_s;
texture<float, 2, NormalizedFloat> tex_t;
extern "C" __global__ void kernel_b() {}
