/* A stand-in SYCL runtime for tests/interop/wrap_llvm23.py: prints what a
 * wrapper object of `llvm-offload-wrapper --kind=sycl` (LLVM 23's or
 * offloadtool's) hands to __sycl_register_lib and __sycl_unregister_lib, one
 * line per call, and main's line between them.
 * WRAP_EXPECT_IMAGE names the file whose bytes the registered image must hold. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const void *registered;
static int calls;

static const char *image_bytes(const void *image, uint64_t size) {
  const char *path = getenv("WRAP_EXPECT_IMAGE");
  if (!path) return "unchecked";
  FILE *f = fopen(path, "rb");
  if (!f) return "NOFILE";
  static char buf[1 << 22];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  if (n != size) return "WRONGSIZE";
  return size == 0 || memcmp(buf, image, n) == 0 ? "ok" : "WRONG";
}

static void describe(const char *what, const void *image, uint64_t size) {
  /* The first bytes, printable ones as they are: the two wrappers must hand over the same image. */
  char head[17] = {0};
  for (uint64_t i = 0; i < size && i < 16; ++i) {
    char c = ((const char *)image)[i];
    head[i] = c >= 0x20 && c < 0x7f ? c : '.';
  }
  printf("%s call=%d size=%llu bytes=%s head=%s same_as_registered=%s\n", what, ++calls, (unsigned long long)size,
         image_bytes(image, size), head, registered == image ? "yes" : registered ? "NO" : "-");
}

void __sycl_register_lib(const void *image, uint64_t size) {
  describe("register_lib", image, size);
  registered = image;
}

void __sycl_unregister_lib(const void *image, uint64_t size) {
  describe("unregister_lib", image, size);
  fflush(stdout);
}

int main(void) {
  printf("main registered=%s\n", registered ? "yes" : "no");
  return 0;
}
