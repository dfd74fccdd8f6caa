/* offloadtool's CUDA probe, the helper the static build runs (see
 * compat/detect_cuda.cpp): a dynamically linked program, so that libcuda.so.1
 * is loaded by the system's own dynamic loader and C library. It is built with
 * offloadtool and carried inside the static binary; argv[1] names the library.
 * It prints compat/cuda_probe.h's lines on standard output and exits 0. */
#include <stdio.h>

#include "compat/cuda_probe.h"

static void emit(void* context, const char* line) {
  (void)context;
  fputs(line, stdout);
  fputc('\n', stdout);
  fflush(stdout);  /* what was found stays found if libcuda then crashes */
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fputs("usage: offloadtool-cuda-probe LIBRARY\n", stderr);
    return 2;
  }
  ot_cuda_probe(argv[1], emit, NULL);
  return 0;
}
