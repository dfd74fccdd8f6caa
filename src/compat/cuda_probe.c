#include "compat/cuda_probe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* CUresult and CUdevice are int in cuda.h; the attribute numbers are cuda.h's
 * CUdevice_attribute values (stable since CUDA 3.2). */
enum { kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76, kNameBytes = 256 };

typedef int (*InitFn)(unsigned int);
typedef int (*CountFn)(int*);
typedef int (*GetFn)(int*, int);
typedef int (*AttributeFn)(int*, int, int);
typedef int (*ErrorNameFn)(int, const char**);
typedef int (*VersionFn)(int*);
typedef int (*NameFn)(char*, int, int);

/* dlsym's object pointer copied into a function pointer: POSIX guarantees they
 * convert; ISO C has no cast for it (-Wpedantic), memcpy says the same. */
#define LOAD(fn, symbol)                  \
  do {                                    \
    void* found_ = dlsym(h, symbol);      \
    memcpy(&(fn), &found_, sizeof found_); \
  } while (0)

static const char* error_name(ErrorNameFn f, int code) {
  const char* s = NULL;
  if (f && f(code, &s) == 0 && s && *s) return s;
  return "-";
}

void ot_cuda_probe(const char* library, ot_cuda_emit emit, void* context) {
  char line[kNameBytes + 128];
  snprintf(line, sizeof line, "library %s", library);
  emit(context, line);
  void* h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    snprintf(line, sizeof line, "open-error %s", why ? why : "dlopen failed");
    emit(context, line);
    return;
  }
  InitFn init = NULL;
  CountFn count = NULL;
  GetFn get = NULL;
  AttributeFn attribute = NULL;
  ErrorNameFn error = NULL;
  VersionFn version = NULL;
  NameFn name = NULL;
  LOAD(init, "cuInit");
  LOAD(count, "cuDeviceGetCount");
  LOAD(get, "cuDeviceGet");
  LOAD(attribute, "cuDeviceGetAttribute");
  LOAD(error, "cuGetErrorName");
  LOAD(version, "cuDriverGetVersion");
  LOAD(name, "cuDeviceGetName");
  const char* missing = !init ? "cuInit" : !count ? "cuDeviceGetCount" : !get ? "cuDeviceGet"
                        : !attribute ? "cuDeviceGetAttribute" : NULL;
  if (missing) {
    snprintf(line, sizeof line, "missing %s", missing);
    emit(context, line);
    return;
  }
  int v = 0;
  if (version && version(&v) == 0) {
    snprintf(line, sizeof line, "driver %d", v);
    emit(context, line);
  }
  int rc = init(0);
  snprintf(line, sizeof line, "init %d %s", rc, error_name(error, rc));
  emit(context, line);
  if (rc != 0) return;
  int n = 0;
  rc = count(&n);
  if (rc != 0) {
    snprintf(line, sizeof line, "count-error %d %s", rc, error_name(error, rc));
    emit(context, line);
    return;
  }
  snprintf(line, sizeof line, "count %d", n);
  emit(context, line);
  for (int i = 0; i < n; ++i) {
    int device = 0, major = 0, minor = 0;
    char text[kNameBytes] = "";
    rc = get(&device, i);
    if (rc == 0) rc = attribute(&major, kComputeCapabilityMajor, device);
    if (rc == 0) rc = attribute(&minor, kComputeCapabilityMinor, device);
    if (rc == 0 && name && name(text, (int)sizeof text - 1, device) != 0) text[0] = 0;
    text[sizeof text - 1] = 0;
    for (char* p = text; *p; ++p)  /* one line: a name never carries a line break */
      if (*p == '\n' || *p == '\r') *p = ' ';
    snprintf(line, sizeof line, "device %d %d %d %d %s", i, major, minor, rc, text);
    emit(context, line);
  }
  emit(context, "end");
}
