/* A stand-in libomptarget for tests/interop/wrap_openmp.py: checks and prints
 * what an offloadtool OpenMP wrapper object registers. The host program has
 * one entry in ENTRY_SECTION so that the linker defines its bounds.
 * WRAP_EXPECT_IMAGES: colon-separated files whose bytes the images must hold.
 * -DWITH_IMAGE_INFO also defines __tgt_register_image_info. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
  void *addr;
  char *name;
  uint64_t size;
  int32_t flags;
  int32_t data;
};
struct device_image {
  const char *start, *end;
  const void *entries_begin, *entries_end;
};
struct bin_desc {
  int32_t count;
  const struct device_image *images;
  const void *entries_begin, *entries_end;
};
struct image_info {
  int32_t version, number, count;
  const char *arch;
  const char *compile_opts;
};

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
extern const char CAT(__start_, ENTRY_SECTION_ID)[];
extern const char CAT(__stop_, ENTRY_SECTION_ID)[];
__attribute__((section(ENTRY_SECTION), used, aligned(8))) struct entry host_entry = {0, "host_entry", 0, 0, 0};

static int registered;

static const char *image_bytes(int i, const struct device_image *img) {
  const char *list = getenv("WRAP_EXPECT_IMAGES");
  if (!list) return "unchecked";
  char paths[4096];
  snprintf(paths, sizeof paths, "%s", list);
  char *save = 0, *p = strtok_r(paths, ":", &save);
  for (int k = 0; p && k < i; ++k) p = strtok_r(0, ":", &save);
  if (!p) return "NOFILE";
  FILE *f = fopen(p, "rb");
  if (!f) return "NOFILE";
  static char buf[1 << 22];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  if ((size_t)(img->end - img->start) != n) return "WRONGSIZE";
  return memcmp(buf, img->start, n) == 0 ? "ok" : "WRONG";
}

static void describe(const char *what, const struct bin_desc *d) {
  const void *b = CAT(__start_, ENTRY_SECTION_ID), *e = CAT(__stop_, ENTRY_SECTION_ID);
  printf("%s images=%d entries=%s\n", what, d->count, d->entries_begin == b && d->entries_end == e ? "ok" : "WRONG");
  for (int i = 0; i < d->count; ++i) {
    const struct device_image *img = &d->images[i];
    printf("  image %d bytes=%s aligned8=%s entries=%s\n", i, image_bytes(i, img),
           ((uintptr_t)img->start & 7) == 0 ? "yes" : "no",
           img->entries_begin == b && img->entries_end == e ? "ok" : "WRONG");
  }
}

void __tgt_register_lib(const struct bin_desc *d) {
  describe("register_lib", d);
  registered = 1;
}

void __tgt_unregister_lib(const struct bin_desc *d) {
  describe("unregister_lib", d);
  fflush(stdout);
}

#ifdef WITH_IMAGE_INFO
void __tgt_register_image_info(const struct image_info *info) {
  printf("register_image_info version=%d number=%d count=%d arch=%s opts=%s before_lib=%s\n", info->version,
         info->number, info->count, info->arch, info->compile_opts ? "NONNULL" : "null", registered ? "no" : "yes");
}
#endif

int main(void) {
  printf("main\n");
  return 0;
}
