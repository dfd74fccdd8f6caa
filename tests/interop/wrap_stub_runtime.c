/* A stand-in CUDA/HIP runtime for tests/interop/wrap_fatbin.py: every
 * registration call made by an offloadtool wrapper object is checked and
 * printed, one line per call, for the script to compare.
 * Build with -DPREFIX=cuda or -DPREFIX=hip. WRAP_EXPECT_FATBIN names the file
 * whose bytes the registered fat binary must hold. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define RT(name) CAT(CAT(__, PREFIX), name)

struct fatbin_wrapper {
  int32_t magic;
  int32_t version;
  const void *data;
  const void *reserved;
};

/* The host program's table of what each entry name must point at. */
struct expected_symbol {
  const char *name;
  const void *addr;
};
extern const struct expected_symbol expected_symbols[];

static void *const kHandle = (void *)0x4a11d1e;

static const char *check_addr(const char *name, const void *addr) {
  for (const struct expected_symbol *e = expected_symbols; e->name; ++e)
    if (strcmp(e->name, name) == 0) return e->addr == addr ? "ok" : "WRONG";
  return "UNKNOWN";
}

static const char *handle_ok(void *h) { return h == kHandle ? "ok" : "WRONG"; }

void *RT(RegisterFatBinary)(const struct fatbin_wrapper *w) {
  const char *path = getenv("WRAP_EXPECT_FATBIN");
  const char *bytes = "unchecked";
  if (path) {
    FILE *f = fopen(path, "rb");
    bytes = "WRONG";
    if (f) {
      static char buf[1 << 20];
      size_t n = fread(buf, 1, sizeof buf, f);
      fclose(f);
      if (n > 0 && memcmp(buf, w->data, n) == 0) bytes = "ok";
    }
  }
  printf("RegisterFatBinary magic=0x%08x version=%d bytes=%s reserved=%s aligned8=%s\n", (unsigned)w->magic,
         w->version, bytes, w->reserved ? "NONNULL" : "null", ((uintptr_t)w->data & 7) == 0 ? "yes" : "no");
  return kHandle;
}

void RT(RegisterFatBinaryEnd)(void *h) { printf("RegisterFatBinaryEnd h=%s\n", handle_ok(h)); }

void RT(UnregisterFatBinary)(void *h) {
  printf("UnregisterFatBinary h=%s\n", handle_ok(h));
  fflush(stdout);
}

int RT(RegisterFunction)(void *h, const void *host_fun, const char *device_fun, const char *device_name,
                         int thread_limit, void *tid, void *bid, void *bdim, void *gdim, int *wsize) {
  printf("RegisterFunction h=%s name=%s addr=%s same_name=%s limit=%d nulls=%s\n", handle_ok(h), device_fun,
         check_addr(device_fun, host_fun), device_fun == device_name ? "yes" : "no", thread_limit,
         (!tid && !bid && !bdim && !gdim && !wsize) ? "ok" : "WRONG");
  return 0;
}

void RT(RegisterVar)(void *h, const void *host_var, const char *device_addr, const char *device_name, int ext,
                     uint64_t size, int constant, int global) {
  printf("RegisterVar h=%s name=%s addr=%s same_name=%s extern=%d size=%llu constant=%d global=%d\n", handle_ok(h),
         device_addr, check_addr(device_addr, host_var), device_addr == device_name ? "yes" : "no", ext,
         (unsigned long long)size, constant, global);
}

void RT(RegisterSurface)(void *h, const void *host_var, const char *device_addr, const char *device_name, int dim,
                         int ext) {
  printf("RegisterSurface h=%s name=%s addr=%s same_name=%s type=%d extern=%d\n", handle_ok(h), device_addr,
         check_addr(device_addr, host_var), device_addr == device_name ? "yes" : "no", dim, ext);
}

void RT(RegisterTexture)(void *h, const void *host_var, const char *device_addr, const char *device_name, int dim,
                         int norm, int ext) {
  printf("RegisterTexture h=%s name=%s addr=%s same_name=%s type=%d normalized=%d extern=%d\n", handle_ok(h),
         device_addr, check_addr(device_addr, host_var), device_addr == device_name ? "yes" : "no", dim, norm, ext);
}

void RT(RegisterManagedVar)(void *h, const void *aux, const void *addr, const char *name, uint64_t size,
                            unsigned align) {
  printf("RegisterManagedVar h=%s name=%s addr=%s aux=%s size=%llu align=%u\n", handle_ok(h), name,
         check_addr(name, addr), check_addr("aux", aux), (unsigned long long)size, align);
}
