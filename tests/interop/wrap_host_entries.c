/* The host side of tests/interop/wrap_fatbin.py: an offload-entry table as
 * clang emits it, plus the table the stand-in runtime checks addresses with.
 * -DENTRY_SECTION="..." picks the section; -DLLVM20 the 56-byte layout
 * (with -DKIND=2 for CUDA or 4 for HIP); an OpenMP (kind 1) entry is then
 * mixed in and must be skipped. */
#include <stdint.h>
#include <stdio.h>

struct expected_symbol {
  const char *name;
  const void *addr;
};

int kernel_a(void) { return 1; }
void kernel_b(void) {}
int var_x[4];
const int const_y = 5;
int surf_s, tex_t, managed_m, omp_only;
void *managed_aux;

#ifndef LLVM20
struct entry {
  void *addr;
  const char *name;
  uint64_t size;
  int32_t flags;
  int32_t data;
};
__attribute__((section(ENTRY_SECTION), used, aligned(8))) struct entry entries[] = {
    {(void *)kernel_a, "kernel_a", 0, 0, 0},
    {var_x, "var_x", 16, 0, 0},
    {(void *)&const_y, "const_y", 4, 8 | 16, 0},
    {&managed_m, "managed_m", 4, 1, 0},
    {&surf_s, "surf_s", 4, 2 | 8, 7},
    {&tex_t, "tex_t", 4, 3 | 32, 9},
    {(void *)kernel_b, "kernel_b", 0, 0, 0},
};
#else
struct entry {
  uint64_t reserved;
  uint16_t version;
  uint16_t kind;
  uint32_t flags;
  void *addr;
  const char *name;
  uint64_t size;
  uint64_t data;
  void *aux;
};
__attribute__((section(ENTRY_SECTION), used, aligned(8))) struct entry entries[] = {
    {0, 1, KIND, 0, (void *)kernel_a, "kernel_a", 0, 0, 0},
    {0, 1, 1, 0, &omp_only, "omp_only", 4, 0, 0},
    {0, 1, KIND, 0, var_x, "var_x", 16, 0, 0},
    {0, 1, KIND, 8 | 16, (void *)&const_y, "const_y", 4, 0, 0},
    {0, 1, KIND, 1, &managed_m, "managed_m", 4, 16, &managed_aux},
    {0, 1, KIND, 2 | 8, &surf_s, "surf_s", 4, 7, 0},
    {0, 1, KIND, 3 | 32, &tex_t, "tex_t", 4, 9, 0},
    {0, 1, KIND, 0, (void *)kernel_b, "kernel_b", 0, 0, 0},
};
#endif

const struct expected_symbol expected_symbols[] = {
    {"kernel_a", (const void *)kernel_a}, {"kernel_b", (const void *)kernel_b}, {"var_x", var_x},
    {"const_y", &const_y}, {"managed_m", &managed_m}, {"surf_s", &surf_s}, {"tex_t", &tex_t},
    {"omp_only", &omp_only}, {"aux", &managed_aux}, {0, 0},
};

int main(void) {
  printf("main\n");
  return 0;
}
