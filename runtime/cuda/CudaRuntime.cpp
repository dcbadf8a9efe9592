//===- CudaRuntime.cpp - mgpu* entry points on the CUDA driver API -------===//
//
// The runtime that host code lowered by `gpu-to-llvm` (default calling
// convention: memref descriptors expanded into kernel arguments) calls,
// implemented on the CUDA driver API:
//
//   mgpuModuleLoad(blob, bytes) / mgpuModuleLoadJIT(ptx, optLevel)
//                                       -> cuModuleLoadData(Ex)
//   mgpuModuleGetFunction, mgpuLaunchKernel -> cuModuleGetFunction,
//                                              cuLaunchKernel
//   mgpuStream*, mgpuEvent*             -> streams and events
//   mgpuMemAlloc / Free / Memcpy / Memset -> device memory, on the stream
//
// Kernels read device memory only: mha-lower-to-cuda copies each launch's
// host buffers into `gpu.alloc`ed memory around it (mha-stage-kernel-buffers),
// so buffers of any run-time size work. The device is CUDA device 0, or the
// one whose index is $MHA_CUDA_DEVICE; its primary context is made current
// on every call's thread. Errors are fatal: the message names the driver
// call and its CUresult, then the process aborts. Built only where a CUDA
// toolkit is (cuda.h, the driver's stub library); needs the NVIDIA driver
// (libcuda.so.1) at run time.
//
// Provenance: the mgpu* interface is upstream MLIR's
// (mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp, the functions the
// `gpu-to-llvm` host code calls); this file implements the subset our
// pipelines use, written here rather than copied. Where it differs: an
// error aborts with the failing driver call named (upstream prints it and
// goes on), except unloading a module after the driver's teardown
// (CUDA_ERROR_DEINITIALIZED, from a global destructor at exit), which is
// harmless and ignored; the device is chosen by $MHA_CUDA_DEVICE (upstream:
// mgpuSetDefaultDevice); none of upstream's cuSPARSE, cuBLAS or tensor-map
// entry points.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

void check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = "unknown";
  std::fprintf(stderr, "mha cuda runtime: %s failed: %s (%d)\n", what, name,
               static_cast<int>(result));
  std::abort();
}

/// The primary context of the chosen device, retained on first use and never
/// released: host code compiled ahead of time unloads its modules from a
/// global destructor, after the destructors of statics.
CUcontext context() {
  static CUcontext primary = [] {
    check(cuInit(0), "cuInit");
    int ordinal = 0, count = 0;
    if (const char *env = std::getenv("MHA_CUDA_DEVICE"))
      ordinal = std::atoi(env);
    check(cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (ordinal < 0 || ordinal >= count) {
      std::fprintf(stderr,
                   "mha cuda runtime: no CUDA device %d ($MHA_CUDA_DEVICE; "
                   "%d device(s) found)\n",
                   ordinal, count);
      std::abort();
    }
    CUdevice device;
    check(cuDeviceGet(&device, ordinal), "cuDeviceGet");
    CUcontext ctx;
    check(cuDevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain");
    return ctx;
  }();
  return primary;
}

/// Makes the context current on the calling thread (the host code may call
/// from any thread, e.g. OpenMP workers).
void makeCurrent() { check(cuCtxSetCurrent(context()), "cuCtxSetCurrent"); }

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*bytes*/) {
  makeCurrent();
  CUmodule module;
  check(cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

/// PTX text, compiled by the driver for the device at `optLevel` (0-4).
void *mgpuModuleLoadJIT(void *data, int optLevel) {
  makeCurrent();
  CUmodule module;
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  check(cuModuleLoadDataEx(&module, data, 1, options, values),
        "cuModuleLoadDataEx (PTX JIT)");
  return module;
}

/// Host code compiled ahead of time unloads its modules from a global
/// destructor, which may run after the driver has shut down at exit
/// (CUDA_ERROR_DEINITIALIZED): the driver has unloaded them then, nothing is
/// left to do.
void mgpuModuleUnload(void *module) {
  CUresult result = cuCtxSetCurrent(context());
  if (result == CUDA_ERROR_DEINITIALIZED)
    return;
  check(result, "cuCtxSetCurrent");
  result = cuModuleUnload(static_cast<CUmodule>(module));
  if (result != CUDA_ERROR_DEINITIALIZED)
    check(result, "cuModuleUnload");
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  makeCurrent();
  CUfunction function;
  check(cuModuleGetFunction(&function, static_cast<CUmodule>(module), name),
        "cuModuleGetFunction");
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedBytes, void *stream,
                      void **params, void **extra, size_t /*paramCount*/) {
  makeCurrent();
  check(cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY, gridZ,
                       blockX, blockY, blockZ, sharedBytes,
                       static_cast<CUstream>(stream), params, extra),
        "cuLaunchKernel");
}

void *mgpuStreamCreate() {
  makeCurrent();
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  makeCurrent();
  check(cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  makeCurrent();
  check(cuStreamSynchronize(static_cast<CUstream>(stream)),
        "cuStreamSynchronize");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  makeCurrent();
  check(cuStreamWaitEvent(static_cast<CUstream>(stream),
                          static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent");
}

void *mgpuEventCreate() {
  makeCurrent();
  CUevent event;
  check(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return event;
}

void mgpuEventDestroy(void *event) {
  makeCurrent();
  check(cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  makeCurrent();
  check(cuEventSynchronize(static_cast<CUevent>(event)), "cuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  makeCurrent();
  check(cuEventRecord(static_cast<CUevent>(event),
                      static_cast<CUstream>(stream)),
        "cuEventRecord");
}

/// Device memory (`hostShared`: managed memory, reachable from the host
/// too), allocated in stream order.
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  makeCurrent();
  CUdeviceptr pointer = 0;
  if (bytes == 0)
    return nullptr;
  if (hostShared)
    check(cuMemAllocManaged(&pointer, bytes, CU_MEM_ATTACH_GLOBAL),
          "cuMemAllocManaged");
  else
    check(cuMemAllocAsync(&pointer, bytes, static_cast<CUstream>(stream)),
          "cuMemAllocAsync");
  return reinterpret_cast<void *>(pointer);
}

void mgpuMemFree(void *pointer, void *stream) {
  if (!pointer)
    return;
  makeCurrent();
  check(cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(pointer),
                       static_cast<CUstream>(stream)),
        "cuMemFreeAsync");
}

/// Host and device pointers alike (unified addressing).
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (bytes == 0)
    return;
  makeCurrent();
  check(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                      reinterpret_cast<CUdeviceptr>(src), bytes,
                      static_cast<CUstream>(stream)),
        "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream) {
  makeCurrent();
  check(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         static_cast<CUstream>(stream)),
        "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream) {
  makeCurrent();
  check(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         static_cast<CUstream>(stream)),
        "cuMemsetD16Async");
}

void mgpuSetDefaultDevice(int32_t ordinal) {
  // The device is chosen once, from $MHA_CUDA_DEVICE; a request for another
  // after that is an error rather than a silent mismatch.
  static std::once_flag once;
  std::call_once(once, [] { context(); });
  int current = 0;
  if (const char *env = std::getenv("MHA_CUDA_DEVICE"))
    current = std::atoi(env);
  if (ordinal != current) {
    std::fprintf(stderr,
                 "mha cuda runtime: device %d requested, but the runtime "
                 "runs on device %d ($MHA_CUDA_DEVICE)\n",
                 ordinal, current);
    std::abort();
  }
}

} // extern "C"
