//===- VulkanRuntime.cpp - mgpu* entry points on Vulkan ---------*- C++ -*-===//
//
// The runtime that host code lowered by `gpu-to-llvm` (kernel calling
// convention: bare pointers, each followed by its buffer's size in bytes)
// calls, implemented on Vulkan 1.x compute:
//
//   mgpuModuleLoad(spirv, bytes)         -> VkShaderModule
//   mgpuModuleGetFunction(module, name)  -> the entry point of that name
//   mgpuLaunchKernel(function, grid..., block..., smem, stream, params,
//                    extra, count)       -> one dispatch, synchronous
//   mgpuMemAlloc / Free / Memcpy / Memset -> device buffers (host-visible,
//                                           mapped), plain copies
//   mhaHostAlloc / mhaHostFree           -> malloc, free
//   mgpuStream*, mgpuEvent*              -> no-ops (launches are synchronous)
//
// Memref arguments reach the shader as storage buffers: argument i is
// descriptor set 0, binding i (what upstream's GPU->SPIR-V conversion and
// `spirv-lower-abi-attrs` give a kernel's i-th memref). An argument that
// lies in a buffer of mgpuMemAlloc (what mha-stage-kernel-buffers copies
// host buffers into, a device-resident entry's arguments) is bound as it
// is. Any other pointer is plain host memory: the launch copies it into a
// host-visible buffer of its own, dispatches, waits, and copies it back if
// the kernel changed it (kernels lowered by mha-vulkan-backend alone, on
// host buffers). Sizes come from the calling convention: static, known when
// the host code was lowered.
//
// Device buffers are host-visible coherent memory, mapped: the pointer
// mgpuMemAlloc returns is the mapping (on lavapipe, the CPU's memory; on a
// discrete GPU, memory the host can reach). Copies between them and host
// memory are memcpy, after the synchronous launches.
//
// With $MHA_VULKAN_PROFILE set (to anything), launches and the bytes copied
// are counted, and a summary goes to stderr at exit:
//
//   mha vulkan profile: launches N
//   mha vulkan profile: copies: H2D B bytes in C, D2H B bytes in C, D2D ...
//
// Copies count mgpuMemcpy by direction and each launch's copies of host
// memory (in: H2D, back: D2H).
//
// The device is the first one with a compute queue, or the one whose name
// contains $MHA_VULKAN_DEVICE (or whose index it is). Errors are fatal: the
// message names the Vulkan call and its VkResult, then the process aborts.
//
// Provenance: the mgpu* interface and its calling convention (argument i
// of a launch is descriptor set 0, binding i, from (pointer, size) pairs)
// are upstream MLIR's (mlir/lib/ExecutionEngine/VulkanRuntimeWrappers.cpp
// over VulkanRuntime.cpp, which mlir-runner's Vulkan tests use); this file
// is our own, smaller implementation of that interface, not a copy. Where
// it differs: upstream builds the whole runtime (instance, device,
// pipeline) again for every launch and only prints "runOnVulkan failed" on
// an error; here the device lives as long as the process, each kernel's
// pipeline is built once, a buffer is copied back only when the kernel
// changed it (an input may sit in read-only memory), the device can be
// chosen by name or index, a module's f16 capabilities are checked against
// the device before the driver sees them, and every error aborts with the
// failing call named.
//
//===----------------------------------------------------------------------===//

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

// VK_KHR_cooperative_matrix (Vulkan 1.3.255), which Debian 12's headers
// (1.3.239) predate: its structure types, enums and query, as the registry
// defines them.
#ifndef VK_KHR_cooperative_matrix
constexpr const char *kCooperativeMatrixExtension = "VK_KHR_cooperative_matrix";
constexpr VkStructureType kCooperativeMatrixFeaturesType =
    static_cast<VkStructureType>(1000506000);
constexpr VkStructureType kCooperativeMatrixPropertiesType =
    static_cast<VkStructureType>(1000506001);
struct CooperativeMatrixFeatures {
  VkStructureType sType;
  void *pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};
struct CooperativeMatrixProperties {
  VkStructureType sType;
  void *pNext;
  uint32_t MSize, NSize, KSize;
  /// VkComponentTypeKHR: 0 float16, 1 float32.
  uint32_t AType, BType, CType, ResultType;
  VkBool32 saturatingAccumulation;
  /// VkScopeKHR: 3 subgroup.
  uint32_t scope;
};
constexpr uint32_t kComponentFloat16 = 0, kComponentFloat32 = 1,
                   kScopeSubgroup = 3;
using CooperativeMatrixPropertiesQuery = VkResult(VKAPI_PTR *)(
    VkPhysicalDevice, uint32_t *, CooperativeMatrixProperties *);
#else
constexpr const char *kCooperativeMatrixExtension =
    VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
constexpr VkStructureType kCooperativeMatrixFeaturesType =
    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
constexpr VkStructureType kCooperativeMatrixPropertiesType =
    VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
using CooperativeMatrixFeatures = VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
using CooperativeMatrixProperties = VkCooperativeMatrixPropertiesKHR;
constexpr VkComponentTypeKHR kComponentFloat16 = VK_COMPONENT_TYPE_FLOAT16_KHR,
                             kComponentFloat32 = VK_COMPONENT_TYPE_FLOAT32_KHR;
constexpr VkScopeKHR kScopeSubgroup = VK_SCOPE_SUBGROUP_KHR;
using CooperativeMatrixPropertiesQuery =
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR;
#endif

[[noreturn]] void fail(const char *what, VkResult result) {
  std::fprintf(stderr, "mha vulkan runtime: %s failed (VkResult %d)\n", what,
               static_cast<int>(result));
  std::abort();
}

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "mha vulkan runtime: %s\n", what.c_str());
  std::abort();
}

void check(VkResult result, const char *what) {
  if (result != VK_SUCCESS)
    fail(what, result);
}

/// The instance, device and compute queue, created on first use.
struct Device {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory{};
  std::string name;
  /// What f16 kernels need (SPIR-V Float16, StorageBuffer16BitAccess).
  bool float16 = false, storage16 = false, int64 = false;
  /// Subgroup shuffles in compute shaders, and the subgroup size.
  bool shuffle = false;
  uint32_t subgroupSize = 0;
  /// Where in a buffer a binding may start.
  uint64_t offsetAlignment = 1;
  /// What the cooperative-matrix kernels need: 16x16x16 f16 products with
  /// f32 accumulation in subgroups of 32 and the Vulkan memory model; else
  /// what is missing. Whether pipelines must request subgroups of 32 (the
  /// device has several sizes).
  bool cooperativeMatrix = false;
  std::string cooperativeMatrixMissing = "no VK_KHR_cooperative_matrix";
  bool requireSubgroup32 = false, fullSubgroups = false;

  Device() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "mha";
    // 1.3: subgroup size control and the Vulkan memory model, which the
    // cooperative-matrix kernels need (a device of a lower version keeps
    // its own).
    app.apiVersion = VK_API_VERSION_1_3;
    VkInstanceCreateInfo instanceInfo{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    instanceInfo.pApplicationInfo = &app;
    check(vkCreateInstance(&instanceInfo, nullptr, &instance),
          "vkCreateInstance");

    uint32_t count = 0;
    check(vkEnumeratePhysicalDevices(instance, &count, nullptr),
          "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> devices(count);
    check(vkEnumeratePhysicalDevices(instance, &count, devices.data()),
          "vkEnumeratePhysicalDevices");
    const char *wanted = std::getenv("MHA_VULKAN_DEVICE");
    for (uint32_t i = 0; i < count && physical == VK_NULL_HANDLE; ++i) {
      VkPhysicalDeviceProperties properties;
      vkGetPhysicalDeviceProperties(devices[i], &properties);
      if (wanted && *wanted && !std::strstr(properties.deviceName, wanted) &&
          std::to_string(i) != wanted)
        continue;
      uint32_t families = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &families, nullptr);
      std::vector<VkQueueFamilyProperties> props(families);
      vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &families,
                                               props.data());
      for (uint32_t f = 0; f < families; ++f)
        if (props[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
          physical = devices[i];
          queueFamily = f;
          name = properties.deviceName;
          break;
        }
    }
    if (physical == VK_NULL_HANDLE)
      fail(wanted ? std::string("no Vulkan device with a compute queue "
                                "matches MHA_VULKAN_DEVICE=") +
                        wanted
                  : std::string("no Vulkan device with a compute queue"));
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queueInfo.queueFamilyIndex = queueFamily;
    queueInfo.queueCount = 1;
    queueInfo.pQueuePriorities = &priority;
    // f16 kernels need 16-bit storage buffers (core in 1.1) and f16
    // arithmetic (VK_KHR_shader_float16_int8 on a 1.1 device): enabled
    // where the device offers them, as the features it reports.
    VkPhysicalDevice16BitStorageFeatures storageFeatures{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features float16Features{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    std::vector<const char *> extensions;
    uint32_t extensionCount = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &extensionCount,
                                         nullptr);
    std::vector<VkExtensionProperties> available(extensionCount);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &extensionCount,
                                         available.data());
    for (const VkExtensionProperties &extension : available)
      if (!std::strcmp(extension.extensionName,
                       VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
        storageFeatures.pNext = &float16Features;
      }
    // Cooperative matrices with what they need (core features of 1.2 and
    // 1.3), queried and enabled only on a device with the extension.
    CooperativeMatrixFeatures coopFeatures{kCooperativeMatrixFeaturesType};
    VkPhysicalDeviceVulkanMemoryModelFeatures memoryModel{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures sizeControl{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceProperties deviceProperties;
    vkGetPhysicalDeviceProperties(physical, &deviceProperties);
    bool coopExtension =
        deviceProperties.apiVersion >= VK_API_VERSION_1_3 &&
        std::any_of(available.begin(), available.end(),
                    [](const VkExtensionProperties &extension) {
                      return !std::strcmp(extension.extensionName,
                                          kCooperativeMatrixExtension);
                    });
    if (coopExtension) {
      extensions.push_back(kCooperativeMatrixExtension);
      coopFeatures.pNext = &memoryModel;
      memoryModel.pNext = &sizeControl;
      sizeControl.pNext = storageFeatures.pNext;
      storageFeatures.pNext = &coopFeatures;
    }
    VkPhysicalDeviceFeatures2 features{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &storageFeatures;
    vkGetPhysicalDeviceFeatures2(physical, &features);
    float16 = float16Features.shaderFloat16;
    storage16 = storageFeatures.storageBuffer16BitAccess;
    // i64 in kernels (ONNX's int64 key lengths): a core feature.
    int64 = features.features.shaderInt64;
    // Shuffles between the lanes of a row group (the register kernel) or
    // a quad (the emulated tensor-core kernels): core properties in 1.1.
    VkPhysicalDeviceSubgroupProperties subgroup{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    // The subgroup sizes a pipeline may request (core in 1.3).
    VkPhysicalDeviceSubgroupSizeControlProperties sizes{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    if (coopExtension)
      subgroup.pNext = &sizes;
    VkPhysicalDeviceProperties2 properties{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    properties.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(physical, &properties);
    subgroupSize = subgroup.subgroupSize;
    offsetAlignment = std::max<uint64_t>(
        properties.properties.limits.minStorageBufferOffsetAlignment, 1);
    shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
              (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    if (coopExtension)
      checkCooperativeMatrices(coopFeatures, memoryModel, sizeControl, sizes);

    VkDeviceCreateInfo deviceInfo{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    deviceInfo.pNext = &features;
    deviceInfo.queueCreateInfoCount = 1;
    deviceInfo.pQueueCreateInfos = &queueInfo;
    deviceInfo.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    deviceInfo.ppEnabledExtensionNames = extensions.data();
    check(vkCreateDevice(physical, &deviceInfo, nullptr, &device),
          "vkCreateDevice");
    vkGetDeviceQueue(device, queueFamily, 0, &queue);
    VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    poolInfo.queueFamilyIndex = queueFamily;
    check(vkCreateCommandPool(device, &poolInfo, nullptr, &commandPool),
          "vkCreateCommandPool");
  }

  /// Sets cooperativeMatrix (or cooperativeMatrixMissing) from the device's
  /// features and cooperative-matrix shapes, and how pipelines get
  /// subgroups of 32.
  void checkCooperativeMatrices(
      const CooperativeMatrixFeatures &coop,
      const VkPhysicalDeviceVulkanMemoryModelFeatures &memoryModel,
      const VkPhysicalDeviceSubgroupSizeControlFeatures &sizeControl,
      const VkPhysicalDeviceSubgroupSizeControlProperties &sizes) {
    auto query = reinterpret_cast<CooperativeMatrixPropertiesQuery>(
        vkGetInstanceProcAddr(
            instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    uint32_t count = 0;
    if (query)
      query(physical, &count, nullptr);
    std::vector<CooperativeMatrixProperties> shapes(count);
    for (CooperativeMatrixProperties &shape : shapes)
      shape = {kCooperativeMatrixPropertiesType};
    if (query && count)
      query(physical, &count, shapes.data());
    bool shape = std::any_of(
        shapes.begin(), shapes.end(), [](const CooperativeMatrixProperties &p) {
          return p.MSize == 16 && p.NSize == 16 && p.KSize == 16 &&
                 p.AType == kComponentFloat16 && p.BType == kComponentFloat16 &&
                 p.CType == kComponentFloat32 &&
                 p.ResultType == kComponentFloat32 && p.scope == kScopeSubgroup;
        });
    bool sized = sizes.minSubgroupSize <= 32 && sizes.maxSubgroupSize >= 32;
    requireSubgroup32 = sizes.minSubgroupSize != sizes.maxSubgroupSize;
    fullSubgroups = sizeControl.computeFullSubgroups;
    if (!coop.cooperativeMatrix)
      cooperativeMatrixMissing = "the cooperativeMatrix feature off";
    else if (!shape)
      cooperativeMatrixMissing = "no 16x16x16 f16 x f16 + f32 subgroup shape";
    else if (!memoryModel.vulkanMemoryModel)
      cooperativeMatrixMissing = "no Vulkan memory model";
    else if (!sized ||
             (requireSubgroup32 && (!sizeControl.subgroupSizeControl ||
                                    !(sizes.requiredSubgroupSizeStages &
                                      VK_SHADER_STAGE_COMPUTE_BIT))))
      cooperativeMatrixMissing = "no subgroups of 32 invocations";
    else
      cooperativeMatrix = true;
  }

  /// A memory type that the host can map, coherent, among `allowed`.
  uint32_t hostVisibleMemoryType(uint32_t allowed) const {
    VkMemoryPropertyFlags flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
      if ((allowed & (1u << i)) &&
          (memory.memoryTypes[i].propertyFlags & flags) == flags)
        return i;
    fail("no host-visible coherent memory type");
  }
};

/// Never destroyed: host code compiled ahead of time unloads its kernel
/// modules from a global destructor (`.fini_array`), which runs after the
/// destructors of function-local statics; the device must outlive it. The
/// process's exit releases it.
Device &device() {
  static Device *instance = new Device;
  return *instance;
}

struct Module;

/// An entry point, with the pipeline built for the number of buffers its
/// first launch passed (a kernel's signature does not change).
struct Function {
  Module *module;
  std::string name;
  uint32_t buffers = 0;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;

  ~Function() {
    VkDevice d = device().device;
    vkDestroyPipeline(d, pipeline, nullptr);
    vkDestroyPipelineLayout(d, layout, nullptr);
    vkDestroyDescriptorSetLayout(d, setLayout, nullptr);
  }
};

/// A shader module and the entry points looked up in it, which live as long
/// as the module (the host code unloads it when the program ends).
struct Module {
  VkShaderModule shader = VK_NULL_HANDLE;
  /// Whether its kernels use cooperative matrices (their pipelines then
  /// request subgroups of 32).
  bool cooperativeMatrix = false;
  std::vector<std::unique_ptr<Function>> functions;
};

std::mutex launchMutex;

void buildPipeline(Function &function, uint32_t buffers) {
  Device &d = device();
  std::vector<VkDescriptorSetLayoutBinding> bindings(buffers);
  for (uint32_t i = 0; i < buffers; ++i) {
    bindings[i] = {};
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo setInfo{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.bindingCount = buffers;
  setInfo.pBindings = bindings.data();
  check(vkCreateDescriptorSetLayout(d.device, &setInfo, nullptr,
                                    &function.setLayout),
        "vkCreateDescriptorSetLayout");
  VkPipelineLayoutCreateInfo layoutInfo{
      VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &function.setLayout;
  check(vkCreatePipelineLayout(d.device, &layoutInfo, nullptr,
                               &function.layout),
        "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo pipelineInfo{
      VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipelineInfo.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipelineInfo.stage.module = function.module->shader;
  pipelineInfo.stage.pName = function.name.c_str();
  pipelineInfo.layout = function.layout;
  // The cooperative-matrix kernels' subgroups are 32 invocations.
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroupSize{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  subgroupSize.requiredSubgroupSize = 32;
  if (function.module->cooperativeMatrix && d.requireSubgroup32) {
    pipelineInfo.stage.pNext = &subgroupSize;
    if (d.fullSubgroups)
      pipelineInfo.stage.flags |=
          VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  }
  check(vkCreateComputePipelines(d.device, VK_NULL_HANDLE, 1, &pipelineInfo,
                                 nullptr, &function.pipeline),
        "vkCreateComputePipelines");
  function.buffers = buffers;
}

/// A host-visible, coherent storage buffer, mapped for as long as it lives.
struct Memory {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void *mapped = nullptr;
  uint64_t bytes = 0;

  explicit Memory(uint64_t bytes) : bytes(bytes) {
    Device &d = device();
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = bytes ? bytes : 4; // Vulkan has no empty buffers.
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check(vkCreateBuffer(d.device, &info, nullptr, &buffer), "vkCreateBuffer");
    VkMemoryRequirements needs;
    vkGetBufferMemoryRequirements(d.device, buffer, &needs);
    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.allocationSize = needs.size;
    allocate.memoryTypeIndex = d.hostVisibleMemoryType(needs.memoryTypeBits);
    check(vkAllocateMemory(d.device, &allocate, nullptr, &memory),
          "vkAllocateMemory");
    check(vkBindBufferMemory(d.device, buffer, memory, 0),
          "vkBindBufferMemory");
    check(vkMapMemory(d.device, memory, 0, VK_WHOLE_SIZE, 0, &mapped),
          "vkMapMemory");
  }
  Memory(const Memory &) = delete;
  Memory &operator=(const Memory &) = delete;
  ~Memory() {
    Device &d = device();
    vkUnmapMemory(d.device, memory);
    vkDestroyBuffer(d.device, buffer, nullptr);
    vkFreeMemory(d.device, memory, nullptr);
  }
};

/// $MHA_VULKAN_PROFILE's counts, printed at exit.
class Profile {
public:
  /// The process's profile, or null when $MHA_VULKAN_PROFILE is not set.
  static Profile *get() {
    static Profile *profile = [] {
      if (!std::getenv("MHA_VULKAN_PROFILE"))
        return static_cast<Profile *>(nullptr);
      std::atexit([] { get()->print(); });
      return new Profile;
    }();
    return profile;
  }

  enum Direction { H2H, H2D, D2H, D2D };
  void countCopy(Direction direction, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    copyBytes[direction] += bytes;
    ++copies[direction];
  }
  void countLaunch() {
    std::lock_guard<std::mutex> lock(mutex);
    ++launches;
  }

private:
  void print() {
    std::lock_guard<std::mutex> lock(mutex);
    std::fprintf(stderr, "mha vulkan profile: launches %llu\n", launches);
    const char *labels[] = {"H2H", "H2D", "D2H", "D2D"};
    std::fprintf(stderr, "mha vulkan profile: copies:");
    for (int d = 0; d < 4; ++d)
      std::fprintf(stderr, "%s %s %llu bytes in %llu", d ? "," : "", labels[d],
                   copyBytes[d], copies[d]);
    std::fprintf(stderr, "\n");
  }

  std::mutex mutex;
  unsigned long long launches = 0;
  unsigned long long copyBytes[4] = {0, 0, 0, 0};
  unsigned long long copies[4] = {0, 0, 0, 0};
};

/// The buffers of mgpuMemAlloc, by the address of their mapping.
class Allocations {
public:
  void *allocate(uint64_t bytes) {
    auto memory = std::make_unique<Memory>(bytes);
    void *pointer = memory->mapped;
    std::lock_guard<std::mutex> lock(mutex);
    byAddress[reinterpret_cast<uintptr_t>(pointer)] = std::move(memory);
    return pointer;
  }

  void free(void *pointer) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!byAddress.erase(reinterpret_cast<uintptr_t>(pointer)))
      fail("mgpuMemFree of a pointer mgpuMemAlloc did not return");
  }

  /// The buffer that holds the `bytes` bytes at `pointer`, and where in it
  /// they start; null when they are not (all) in one.
  const Memory *find(const void *pointer, uint64_t bytes, uint64_t &offset) {
    auto address = reinterpret_cast<uintptr_t>(pointer);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = byAddress.upper_bound(address);
    if (it == byAddress.begin())
      return nullptr;
    --it;
    offset = address - it->first;
    if (offset + bytes > it->second->bytes ||
        (offset && !bytes)) // past the end, or an empty view in it
      return nullptr;
    return it->second.get();
  }

private:
  std::mutex mutex;
  std::map<uintptr_t, std::unique_ptr<Memory>> byAddress;
};

/// Never destroyed, as the device.
Allocations &allocations() {
  static Allocations *instance = new Allocations;
  return *instance;
}

/// Whether `pointer` is in a buffer of mgpuMemAlloc.
bool onDevice(const void *pointer) {
  uint64_t offset = 0;
  return pointer && allocations().find(pointer, 1, offset);
}

/// One kernel argument: a device buffer bound where the argument lies in
/// it, else a copy of host memory, written back if the kernel changed it.
struct Binding {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0, range = 0;
  std::unique_ptr<Memory> copy;
  void *host = nullptr;

  Binding(void *pointer, uint64_t bytes) : range(bytes ? bytes : 4) {
    uint64_t at = 0;
    const Memory *memory = allocations().find(pointer, bytes, at);
    if (memory && at % device().offsetAlignment == 0) {
      buffer = memory->buffer;
      offset = at;
      return;
    }
    copy = std::make_unique<Memory>(bytes);
    buffer = copy->buffer;
    host = pointer;
    if (bytes)
      std::memcpy(copy->mapped, host, bytes);
    if (Profile *profile = Profile::get())
      profile->countCopy(memory ? Profile::D2D : Profile::H2D, bytes);
  }

  /// Copies a host argument back unless the kernel left it as it was:
  /// arguments the kernel only reads may live in read-only memory (a
  /// constant global of the host code, a caller's const input), which must
  /// not be written.
  void copyBack() {
    if (!copy || !copy->bytes || !std::memcmp(host, copy->mapped, copy->bytes))
      return;
    std::memcpy(host, copy->mapped, copy->bytes);
    if (Profile *profile = Profile::get())
      profile->countCopy(onDevice(host) ? Profile::D2D : Profile::D2H,
                         copy->bytes);
  }
};

/// Stops with a message when the module declares a capability the device
/// lacks (f16 kernels on a device without f16 arithmetic or 16-bit storage,
/// i64 ones without 64-bit integers, shuffling ones without subgroup
/// shuffles in compute shaders or with subgroups of fewer than 8 lanes:
/// the register kernel's row groups have up to 8)
/// rather than leaving it to the driver. Capabilities are the module's first
/// instructions (OpCapability, opcode 17), after the 5-word header.
bool requireCapabilities(const std::vector<uint32_t> &words) {
  constexpr uint32_t opCapability = 17, float16Cap = 9, int64Cap = 11,
                     shuffleCap = 65, storageBuffer16BitAccess = 4433,
                     cooperativeMatrixCap = 6022;
  const Device &d = device();
  bool cooperativeMatrix = false;
  for (size_t at = 5; at < words.size();) {
    uint32_t count = words[at] >> 16, opcode = words[at] & 0xffff;
    if (opcode != opCapability || count < 2 || at + 1 >= words.size())
      break;
    uint32_t capability = words[at + 1];
    if (capability == shuffleCap && (!d.shuffle || d.subgroupSize < 8))
      fail("the kernels shuffle values within subgroups of at least 8 lanes "
           "(GroupNonUniformShuffle), which the Vulkan device '" +
           d.name + "' does not offer (subgroups of " +
           std::to_string(d.subgroupSize) + " lanes" +
           (d.shuffle ? "" : ", no shuffles in compute shaders") + ")");
    if (capability == int64Cap && !d.int64)
      fail("the kernels need 64-bit integers (Int64: i64 key lengths), "
           "which the Vulkan device '" +
           d.name + "' does not offer; give i32 lengths instead");
    if ((capability == float16Cap && !d.float16) ||
        (capability == storageBuffer16BitAccess && !d.storage16))
      fail("the kernels need f16 " +
           std::string(capability == float16Cap ? "arithmetic (Float16)"
                                                 : "storage buffers "
                                                   "(StorageBuffer16BitAccess)") +
           ", which the Vulkan device '" + d.name +
           "' does not offer; lower f32 data instead");
    if (capability == cooperativeMatrixCap && !d.cooperativeMatrix)
      fail("the kernels use cooperative matrices (CooperativeMatrixKHR: "
           "16x16x16 f16 products with f32 accumulation in subgroups of 32, "
           "the Vulkan memory model), which the Vulkan device '" +
           d.name + "' does not offer (" + d.cooperativeMatrixMissing +
           "); lower without cooperative-matrix");
    cooperativeMatrix |= capability == cooperativeMatrixCap;
    at += count;
  }
  return cooperativeMatrix;
}

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t bytes) {
  if (bytes % 4 != 0)
    fail("the SPIR-V binary is not a whole number of words");
  // The binary may not be 4-byte aligned where the host code keeps it.
  std::vector<uint32_t> words(bytes / 4);
  std::memcpy(words.data(), data, bytes);
  bool cooperativeMatrix = requireCapabilities(words);
  VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  info.codeSize = bytes;
  info.pCode = words.data();
  auto *module = new Module;
  module->cooperativeMatrix = cooperativeMatrix;
  check(vkCreateShaderModule(device().device, &info, nullptr, &module->shader),
        "vkCreateShaderModule");
  return module;
}

void mgpuModuleUnload(void *module) {
  auto *m = static_cast<Module *>(module);
  m->functions.clear();
  vkDestroyShaderModule(device().device, m->shader, nullptr);
  delete m;
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  auto *m = static_cast<Module *>(module);
  for (const std::unique_ptr<Function> &f : m->functions)
    if (f->name == name)
      return f.get();
  m->functions.push_back(std::make_unique<Function>());
  m->functions.back()->module = m;
  m->functions.back()->name = name;
  return m->functions.back().get();
}

void *mgpuStreamCreate() { return &device(); }
void mgpuStreamSynchronize(void *) {}
void mgpuStreamDestroy(void *) {}
void mgpuStreamWaitEvent(void *, void *) {}
void *mgpuEventCreate() { return &device(); }
void mgpuEventDestroy(void *) {}
void mgpuEventSynchronize(void *) {}
void mgpuEventRecord(void *, void *) {}

/// A device buffer (`hostShared` or not: all are host-visible).
void *mgpuMemAlloc(uint64_t bytes, void * /*stream*/, bool /*hostShared*/) {
  if (bytes == 0)
    return nullptr;
  return allocations().allocate(bytes);
}

void mgpuMemFree(void *pointer, void * /*stream*/) {
  if (pointer)
    allocations().free(pointer);
}

/// Host and device pointers alike (device buffers are mapped).
void mgpuMemcpy(void *dst, void *src, size_t bytes, void * /*stream*/) {
  if (bytes == 0)
    return;
  std::memcpy(dst, src, bytes);
  if (Profile *profile = Profile::get())
    profile->countCopy(
        static_cast<Profile::Direction>(2 * onDevice(src) + onDevice(dst)),
        bytes);
}

/// Host memory for the arrays a call copies to and from the device
/// (mha-aot's NAME_host_alloc): plain memory, which the copies (memcpy)
/// read at full speed here.
void *mhaHostAlloc(uint64_t bytes) {
  return bytes ? std::malloc(bytes) : nullptr;
}

void mhaHostFree(void *pointer) { std::free(pointer); }

void mgpuMemset32(void *dst, unsigned value, size_t count, void *) {
  auto *words = static_cast<uint32_t *>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *) {
  auto *halves = static_cast<uint16_t *>(dst);
  for (size_t i = 0; i < count; ++i)
    halves[i] = value;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t /*blockX*/,
                      intptr_t /*blockY*/, intptr_t /*blockZ*/,
                      int32_t /*smem*/, void * /*stream*/, void **params,
                      void ** /*extra*/, size_t paramCount) {
  // The workgroup size is the shader's own (its LocalSize); the block sizes
  // the host code passes are the same numbers.
  if (paramCount % 2 != 0)
    fail("kernel arguments must come as (pointer, size in bytes) pairs");
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return;
  std::lock_guard<std::mutex> lock(launchMutex);
  Device &d = device();
  auto &f = *static_cast<Function *>(function);
  uint32_t count = static_cast<uint32_t>(paramCount / 2);
  if (f.pipeline == VK_NULL_HANDLE)
    buildPipeline(f, count);
  else if (f.buffers != count)
    fail("kernel '" + f.name + "' launched with a different number of "
         "buffers");

  std::vector<Binding> bindings;
  bindings.reserve(count);
  for (uint32_t i = 0; i < count; ++i)
    bindings.emplace_back(*static_cast<void **>(params[2 * i]),
                          *static_cast<uint64_t *>(params[2 * i + 1]));
  if (Profile *profile = Profile::get())
    profile->countLaunch();

  VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                count ? count : 1};
  VkDescriptorPoolCreateInfo poolInfo{
      VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  poolInfo.maxSets = 1;
  poolInfo.poolSizeCount = 1;
  poolInfo.pPoolSizes = &poolSize;
  VkDescriptorPool pool;
  check(vkCreateDescriptorPool(d.device, &poolInfo, nullptr, &pool),
        "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo setInfo{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  setInfo.descriptorPool = pool;
  setInfo.descriptorSetCount = 1;
  setInfo.pSetLayouts = &f.setLayout;
  VkDescriptorSet set;
  check(vkAllocateDescriptorSets(d.device, &setInfo, &set),
        "vkAllocateDescriptorSets");
  std::vector<VkDescriptorBufferInfo> infos(count);
  std::vector<VkWriteDescriptorSet> writes(count);
  for (uint32_t i = 0; i < count; ++i) {
    infos[i] = {bindings[i].buffer, bindings[i].offset, bindings[i].range};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(d.device, count, writes.data(), 0, nullptr);

  VkCommandBufferAllocateInfo commandInfo{
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  commandInfo.commandPool = d.commandPool;
  commandInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  commandInfo.commandBufferCount = 1;
  VkCommandBuffer commands;
  check(vkAllocateCommandBuffers(d.device, &commandInfo, &commands),
        "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, f.pipeline);
  vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, f.layout,
                          0, 1, &set, 0, nullptr);
  vkCmdDispatch(commands, static_cast<uint32_t>(gridX),
                static_cast<uint32_t>(gridY), static_cast<uint32_t>(gridZ));
  // Shader writes visible to the host reads after the fence.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr,
                       0, nullptr);
  check(vkEndCommandBuffer(commands), "vkEndCommandBuffer");

  VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  check(vkCreateFence(d.device, &fenceInfo, nullptr, &fence), "vkCreateFence");
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  check(vkQueueSubmit(d.queue, 1, &submit, fence), "vkQueueSubmit");
  check(vkWaitForFences(d.device, 1, &fence, VK_TRUE, UINT64_MAX),
        "vkWaitForFences");
  for (Binding &binding : bindings)
    binding.copyBack();
  vkDestroyFence(d.device, fence, nullptr);
  vkFreeCommandBuffers(d.device, d.commandPool, 1, &commands);
  vkDestroyDescriptorPool(d.device, pool, nullptr);
}

} // extern "C"
