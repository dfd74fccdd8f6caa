/* A stand-in for NVIDIA's libcuda.so.1 (the CUDA driver API), for
 * tests/real/cuda_detect_test.py: it reports the GPUs the test chooses.
 *
 *   OT_STAND_IN_CUDA_DEVICES  compute capabilities, comma-separated, as major
 *                             and minor digits: "86,90" is an sm_86 GPU
 *                             (ordinal 0) and an sm_90 GPU (ordinal 1); "" none
 *   OT_STAND_IN_CUDA_INIT     the CUresult cuInit returns (default 0)
 *
 * Like the real driver, its cuInit starts a thread and uses thread-local
 * storage: a statically linked program that dlopens it crashes there
 * (compat/cuda_probe_helper.cpp), so the static build's suite shows that the
 * helper it runs instead survives both. CUresult values, attribute numbers and
 * error names are cuda.h's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kSuccess = 0, kInvalidValue = 1, kNotInitialized = 3, kInvalidDevice = 101, kNoDevice = 100 };
enum { kMaxDevices = 16 };

static _Thread_local int calls_on_this_thread;
static int initialized;
static int count;
static int capability[kMaxDevices];

static void* driver_thread(void* arg) {
  calls_on_this_thread++;
  return arg;
}

int cuDriverGetVersion(int* version) {
  if (!version) return kInvalidValue;
  *version = 12020;
  return kSuccess;
}

int cuGetErrorName(int error, const char** name) {
  if (!name) return kInvalidValue;
  switch (error) {
    case 0: *name = "CUDA_SUCCESS"; return kSuccess;
    case 3: *name = "CUDA_ERROR_NOT_INITIALIZED"; return kSuccess;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return kSuccess;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; return kSuccess;
    case 999: *name = "CUDA_ERROR_UNKNOWN"; return kSuccess;
    default: *name = NULL; return kInvalidValue;
  }
}

int cuInit(unsigned int flags) {
  if (flags != 0) return kInvalidValue;
  pthread_t t;
  if (pthread_create(&t, NULL, driver_thread, NULL) != 0 || pthread_join(t, NULL) != 0) return 999;
  calls_on_this_thread++;
  const char* init = getenv("OT_STAND_IN_CUDA_INIT");
  if (init && *init && atoi(init) != 0) return atoi(init);
  const char* devices = getenv("OT_STAND_IN_CUDA_DEVICES");
  count = 0;
  for (const char* p = devices ? devices : ""; *p && count < kMaxDevices;) {
    char* end = NULL;
    long cc = strtol(p, &end, 10);
    if (end == p) return 999;
    capability[count++] = (int)cc;
    p = *end == ',' ? end + 1 : end;
  }
  initialized = 1;
  return kSuccess;
}

int cuDeviceGetCount(int* n) {
  if (!initialized) return kNotInitialized;
  if (!n) return kInvalidValue;
  *n = count;
  return kSuccess;
}

int cuDeviceGet(int* device, int ordinal) {
  if (!initialized) return kNotInitialized;
  if (!device || ordinal < 0 || ordinal >= count) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

int cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (!initialized) return kNotInitialized;
  if (!value || device < 0 || device >= count) return kInvalidDevice;
  if (attribute == 75) *value = capability[device] / 10;       /* COMPUTE_CAPABILITY_MAJOR */
  else if (attribute == 76) *value = capability[device] % 10;  /* COMPUTE_CAPABILITY_MINOR */
  else return kInvalidValue;
  return kSuccess;
}

int cuDeviceGetName(char* name, int length, int device) {
  if (!initialized) return kNotInitialized;
  if (!name || length <= 0 || device < 0 || device >= count) return kInvalidDevice;
  snprintf(name, (size_t)length, "Stand-in GPU sm_%d", capability[device]);
  return kSuccess;
}
