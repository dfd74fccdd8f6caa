/* The CUDA driver API asked, at run time, for the NVIDIA GPUs and their compute
 * capabilities: libcuda.so.1 is loaded with dlopen (no link dependency), then
 * cuInit(0), cuDeviceGetCount, cuDeviceGet and cuDeviceGetAttribute with
 * CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR (75) / _MINOR (76); cuGetErrorName,
 * cuDriverGetVersion and cuDeviceGetName when the library has them.
 *
 * C, not C++: the same function runs inside offloadtool (the shared build) and
 * as the body of the small dynamically linked helper the static build executes
 * (compat/cuda_probe_main.c; why: docs/gpu-detection.md and detect_cuda.cpp),
 * which must need nothing of the system but its C library.
 *
 * What it finds is written as lines of text, one call of `emit` each (the
 * helper writes them to its standard output; compat/detect_cuda.cpp reads them):
 *   library <name as given to dlopen>
 *   open-error <dlerror()>                 libcuda could not be loaded: nothing follows
 *   missing <symbol>                       a required entry point is absent: nothing follows
 *   driver <cuDriverGetVersion's value>    (when it has the entry point and it succeeds)
 *   init <CUresult> <cuGetErrorName or ->  nothing follows unless CUresult is 0
 *   count-error <CUresult> <name or ->     cuDeviceGetCount failed: nothing follows
 *   count <n>
 *   device <ordinal> <major> <minor> <CUresult> <name...>   CUresult: of the first call that failed (0 = none)
 *   end
 */
#ifndef OT_COMPAT_CUDA_PROBE_H
#define OT_COMPAT_CUDA_PROBE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*ot_cuda_emit)(void* context, const char* line);

/* Never returns early without "end" unless the library cannot be opened or
 * lacks an entry point. The library stays loaded (libcuda's threads, if it
 * started any, live on). */
void ot_cuda_probe(const char* library, ot_cuda_emit emit, void* context);

#ifdef __cplusplus
}
#endif

#endif
