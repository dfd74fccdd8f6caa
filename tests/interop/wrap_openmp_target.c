/* An OpenMP program whose target regions must run on the host device
 * (tests/interop/wrap_openmp.py links it with an offloadtool wrapper object
 * and LLVM 19's libomptarget, without clang-linker-wrapper). */
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
int scale = 3;
#pragma omp end declare target

int main(void) {
  int a[256];
  long sum = 0;
#pragma omp target teams distribute parallel for map(from : a)
  for (int i = 0; i < 256; ++i) a[i] = i * scale;
  for (int i = 0; i < 256; ++i) sum += a[i];
  int initial = -1;
#pragma omp target map(from : initial)
  { initial = omp_is_initial_device(); }
  printf("sum=%ld initial_device=%d\n", sum, initial);
  return sum == 97920 && initial == 0 ? 0 : 1;
}
