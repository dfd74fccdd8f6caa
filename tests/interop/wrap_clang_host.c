/* The rest of tests/interop/wrap_fatbin.py's programs around a host object
 * that clang 22 compiled from wrap_clang_kernels.cu (-DHIP when as HIP): the
 * table of what each registered name must point at, for the stand-in runtime
 * (wrap_stub_runtime.c), and the launch entry points the kernel stubs
 * reference, which nothing calls. The symbols are named as clang names them. */
#include <stdio.h>

struct expected_symbol {
  const char *name;
  const void *addr;
};

#ifdef HIP
/* A HIP kernel is registered by its handle, a variable named after the kernel;
 * a managed variable by its storage (<name>.managed) with, as aux, the pointer
 * the host code reads it through. */
extern const char kernel_a __asm__("_Z8kernel_aPii");
extern const char kernel_b __asm__("kernel_b");
extern const char managed_m __asm__("managed_m.managed");
extern const char managed_ptr __asm__("managed_m");
struct dim3 {
  unsigned x, y, z;
};
int hipLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **args, unsigned long shm, void *s) {
  return 1;
}
int __hipPopCallConfiguration(struct dim3 *g, struct dim3 *b, unsigned long *shm, void **s) { return 1; }
#else
/* A CUDA kernel is registered by its host stub. Without a CUDA installation
 * clang assumes a CUDA before 9.2 and launches through cudaSetupArgument and
 * cudaLaunch. */
extern const char kernel_a __asm__("_Z23__device_stub__kernel_aPii");
extern const char kernel_b __asm__("__device_stub__kernel_b");
int cudaSetupArgument(const void *arg, unsigned long size, unsigned long offset) { return 1; }
int cudaLaunch(const void *f) { return 1; }
#endif
extern const char var_x, const_y, surf_s, tex_t;

const struct expected_symbol expected_symbols[] = {
    {"_Z8kernel_aPii", &kernel_a}, {"kernel_b", &kernel_b}, {"var_x", &var_x},
    {"const_y", &const_y},         {"surf_s", &surf_s},     {"tex_t", &tex_t},
#ifdef HIP
    {"managed_m", &managed_m},     {"aux", &managed_ptr},
#endif
    {0, 0},
};

int main(void) {
  printf("main\n");
  return 0;
}
