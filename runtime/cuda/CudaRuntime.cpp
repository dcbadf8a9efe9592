//===- CudaRuntime.cpp - mgpu* entry points on the CUDA driver API -------===//
//
// The runtime that host code lowered by `gpu-to-llvm` (default calling
// convention: memref descriptors expanded into kernel arguments) calls,
// implemented on the CUDA driver API:
//
//   mgpuModuleLoad(blob, bytes) / mgpuModuleLoadJIT(ptx, optLevel)
//                                       -> cuModuleLoadData(Ex)
//   mgpuModuleGetFunction, mgpuLaunchKernel -> cuModuleGetFunction,
//                                              cuLaunchKernel (and, for
//                                              dynamic shared memory over
//                                              48 KiB, cuFuncSetAttribute)
//   mgpuStream*, mgpuEvent*             -> streams (created once, then
//                                          reused) and events
//   mgpuMemAlloc / Free / Memcpy / Memset -> device memory, on the stream
//                                          (stream-ordered allocation:
//                                          the driver's pool reuses it)
//   mhaHostAlloc / mhaHostFree          -> page-locked host memory
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
// With $MHA_CUDA_PROFILE set (to anything), each launch is timed by a pair of
// events on its stream and each copy is counted by direction; at exit a
// summary goes to stderr, one line per kernel and one for the copies:
//
//   mha cuda profile: kernel NAME: N launches, median X ms, total Y ms
//   mha cuda profile: busy Z ms
//   mha cuda profile: copies: H2D B bytes in C, D2H B bytes in C, D2D ...
//
// (benchmarks divide by their number of calls). A launch's time runs from
// its stream reaching it to its end, so launches on concurrent streams
// overlap: "busy" is the union of all launches' intervals, the time the
// device had one of them in flight. Timing events serialize nothing the
// stream does not already order.
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

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

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

/// $MHA_CUDA_PROFILE's records: launches waiting for their events, kernel
/// times by name, copy bytes by direction. Printed at exit.
class Profile {
public:
  /// The process's profile, or null when $MHA_CUDA_PROFILE is not set.
  static Profile *get() {
    static Profile *profile = [] {
      if (!std::getenv("MHA_CUDA_PROFILE"))
        return static_cast<Profile *>(nullptr);
      std::atexit([] { get()->print(); });
      return new Profile;
    }();
    return profile;
  }

  void nameFunction(CUfunction function, const char *name) {
    std::lock_guard<std::mutex> lock(mutex);
    names[function] = name;
  }

  /// Brackets a launch on `stream` with timing events; `launch` enqueues it.
  template <typename Launch>
  void timeLaunch(CUfunction function, CUstream stream, Launch launch) {
    Pending record{function, stream, nullptr, nullptr};
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!origin) {
        check(cuEventCreate(&origin, CU_EVENT_DEFAULT), "cuEventCreate");
        check(cuEventRecord(origin, stream), "cuEventRecord");
      }
    }
    check(cuEventCreate(&record.start, CU_EVENT_DEFAULT), "cuEventCreate");
    check(cuEventCreate(&record.stop, CU_EVENT_DEFAULT), "cuEventCreate");
    check(cuEventRecord(record.start, stream), "cuEventRecord");
    launch();
    check(cuEventRecord(record.stop, stream), "cuEventRecord");
    std::lock_guard<std::mutex> lock(mutex);
    pending.push_back(record);
  }

  /// Reads the times of the launches on `stream` (all streams when null),
  /// waiting for them to finish.
  void collect(CUstream stream) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<Pending> waiting;
    for (const Pending &record : pending) {
      if (stream && record.stream != stream) {
        waiting.push_back(record);
        continue;
      }
      check(cuEventSynchronize(record.stop), "cuEventSynchronize");
      float begin = 0, end = 0;
      check(cuEventElapsedTime(&begin, origin, record.start),
            "cuEventElapsedTime");
      check(cuEventElapsedTime(&end, origin, record.stop),
            "cuEventElapsedTime");
      auto name = names.find(record.function);
      kernelMs[name == names.end() ? "?" : name->second].push_back(end -
                                                                   begin);
      intervals.push_back({begin, end});
      cuEventDestroy(record.start);
      cuEventDestroy(record.stop);
    }
    pending.swap(waiting);
  }

  void countCopy(void *dst, void *src, size_t bytes) {
    int direction = 2 * onDevice(src) + onDevice(dst); // H2H H2D D2H D2D
    std::lock_guard<std::mutex> lock(mutex);
    copyBytes[direction] += bytes;
    ++copies[direction];
  }

private:
  struct Pending {
    CUfunction function;
    CUstream stream;
    CUevent start, stop;
  };

  static bool onDevice(void *pointer) {
    unsigned type = 0;
    // Pageable host memory is unknown to the driver: an error, not a type.
    return cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 reinterpret_cast<CUdeviceptr>(pointer)) ==
               CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_DEVICE;
  }

  void print() {
    collect(nullptr);
    for (auto &[name, times] : kernelMs) {
      std::vector<float> sorted = times;
      std::sort(sorted.begin(), sorted.end());
      double total = 0;
      for (float ms : times)
        total += ms;
      std::fprintf(stderr,
                   "mha cuda profile: kernel %s: %zu launches, median %.4f ms, "
                   "total %.4f ms\n",
                   name.c_str(), times.size(), sorted[sorted.size() / 2],
                   total);
    }
    std::sort(intervals.begin(), intervals.end());
    double busy = 0, reach = -1;
    for (auto [begin, end] : intervals) {
      if (end > reach) {
        busy += end - std::max<double>(begin, reach);
        reach = end;
      }
    }
    std::fprintf(stderr, "mha cuda profile: busy %.4f ms\n", busy);
    const char *labels[] = {"H2H", "H2D", "D2H", "D2D"};
    std::fprintf(stderr, "mha cuda profile: copies:");
    for (int d = 0; d < 4; ++d)
      std::fprintf(stderr, "%s %s %llu bytes in %llu", d ? "," : "",
                   labels[d], static_cast<unsigned long long>(copyBytes[d]),
                   static_cast<unsigned long long>(copies[d]));
    std::fprintf(stderr, "\n");
  }

  std::mutex mutex;
  std::map<CUfunction, std::string> names;
  std::vector<Pending> pending;
  CUevent origin = nullptr; // recorded before the first launch
  std::vector<std::pair<float, float>> intervals;
  std::map<std::string, std::vector<float>> kernelMs;
  unsigned long long copyBytes[4] = {0, 0, 0, 0};
  unsigned long long copies[4] = {0, 0, 0, 0};
};

/// Opts `function` into `bytes` of dynamic shared memory where that is more
/// than the 48 KiB a kernel gets without asking
/// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; mha-lower-to-cuda gives
/// a kernel dynamic shared memory only above that), once per function and
/// size.
void optInSharedMemory(CUfunction function, int32_t bytes) {
  if (bytes <= 48 * 1024)
    return;
  static std::mutex mutex;
  static std::map<CUfunction, int32_t> granted;
  std::lock_guard<std::mutex> lock(mutex);
  int32_t &current = granted[function];
  if (current >= bytes)
    return;
  check(cuFuncSetAttribute(
            function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
        "cuFuncSetAttribute (dynamic shared memory above 48 KiB)");
  current = bytes;
}

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
  if (Profile *profile = Profile::get())
    profile->nameFunction(function, name);
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedBytes, void *stream,
                      void **params, void **extra, size_t /*paramCount*/) {
  makeCurrent();
  optInSharedMemory(static_cast<CUfunction>(function), sharedBytes);
  auto launch = [&] {
    check(cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY,
                         gridZ, blockX, blockY, blockZ, sharedBytes,
                         static_cast<CUstream>(stream), params, extra),
          "cuLaunchKernel");
  };
  if (Profile *profile = Profile::get())
    profile->timeLaunch(static_cast<CUfunction>(function),
                        static_cast<CUstream>(stream), launch);
  else
    launch();
}

/// Streams the host code is done with, for the next call to take: each
/// call of a compiled function asks for a stream and gives it back, so that
/// streams are created once (as many as calls run at the same time), not
/// per call. Never destroyed, as the context.
struct StreamPool {
  std::mutex mutex;
  std::vector<CUstream> idle;
};
StreamPool &streamPool() {
  static StreamPool *pool = new StreamPool;
  return *pool;
}

void *mgpuStreamCreate() {
  makeCurrent();
  {
    StreamPool &pool = streamPool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.idle.empty()) {
      CUstream stream = pool.idle.back();
      pool.idle.pop_back();
      return stream;
    }
  }
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return stream;
}

/// Back to the pool: work still on it stays ordered before whatever the
/// next call puts on it.
void mgpuStreamDestroy(void *stream) {
  makeCurrent();
  if (Profile *profile = Profile::get())
    profile->collect(static_cast<CUstream>(stream));
  StreamPool &pool = streamPool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.idle.push_back(static_cast<CUstream>(stream));
}

void mgpuStreamSynchronize(void *stream) {
  makeCurrent();
  check(cuStreamSynchronize(static_cast<CUstream>(stream)),
        "cuStreamSynchronize");
  if (Profile *profile = Profile::get())
    profile->collect(static_cast<CUstream>(stream));
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
  if (Profile *profile = Profile::get())
    profile->countCopy(dst, src, bytes);
  check(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                      reinterpret_cast<CUdeviceptr>(src), bytes,
                      static_cast<CUstream>(stream)),
        "cuMemcpyAsync");
}

/// Page-locked host memory, which copies to and from the device read and
/// write by DMA at full speed without staging (mha-aot's NAME_host_alloc).
/// Not upstream's: its wrappers only register existing memory.
void *mhaHostAlloc(uint64_t bytes) {
  if (bytes == 0)
    return nullptr;
  makeCurrent();
  void *pointer = nullptr;
  check(cuMemHostAlloc(&pointer, bytes, CU_MEMHOSTALLOC_PORTABLE),
        "cuMemHostAlloc");
  return pointer;
}

void mhaHostFree(void *pointer) {
  if (!pointer)
    return;
  makeCurrent();
  check(cuMemFreeHost(pointer), "cuMemFreeHost");
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
