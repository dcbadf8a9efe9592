# -*- Python -*-
# lit configuration of the MHA-MLIR regression suite.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MHA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mha_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "consumer", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
# Brace-delimited names: none is a prefix of another.
for name, value in [
    ("mha_src_root", config.mha_src_root),
    ("mha_obj_root", config.mha_obj_root),
    ("mha_lib_dir", config.mha_lib_dir),
    ("mha_plugin", os.path.join(config.mha_lib_dir, "MHAPlugin.so")),
    ("mlir_cmake_dir", config.mlir_cmake_dir),
    ("cmake", config.cmake_command),
    ("cmake_generator", config.cmake_generator),
    ("cxx", config.cxx_compiler),
    ("cc", config.c_compiler),
    ("mlir_runner_utils", os.path.join(config.llvm_lib_dir, "libmlir_runner_utils.so")),
    ("mlir_c_runner_utils", os.path.join(config.llvm_lib_dir, "libmlir_c_runner_utils.so")),
]:
    config.substitutions.append(("%{" + name + "}", value))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# Our tools first, then LLVM's (FileCheck, not, count, the stock mlir-opt).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.mha_tools_dir, append_path=True)
tool_dirs = [config.mha_tools_dir, config.llvm_tools_dir]
tools = [
    "mha-opt",
    ToolSubst("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")),
    ToolSubst("%mlir_runner", os.path.join(config.llvm_tools_dir, "mlir-runner")),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Numerical tests need numpy (Debian's python3-numpy) under the python lit
# runs tests with; the torch cross-check needs python3-torch.
import subprocess
python = config.host_python or "/usr/bin/python3"
def python_has(module):
    return subprocess.call([python, "-c", "import " + module],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) == 0
if python_has("numpy"):
    config.available_features.add("numpy")
if python_has("torch"):
    config.available_features.add("torch")
# The ONNX tests run under the pinned environment scripts/check.sh makes
# (python/requirements-onnx.txt: onnx 1.23, with ONNX's Attention node test
# cases and onnx.reference) where it is, else under the python above.
onnx_python = os.path.join(config.mha_obj_root, "onnx-venv", "bin", "python")
if not os.path.exists(onnx_python):
    onnx_python = python
if subprocess.call([onnx_python, "-c", "import onnx"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("onnx")
if subprocess.call([onnx_python, "-c",
                    "from onnx.backend.test.case.node import attention"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("onnx-node-tests")
if subprocess.call([onnx_python, "-c", "import onnxruntime"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("onnxruntime")
config.substitutions.append(("%onnx_python", onnx_python))
# PyTorch 2 (torch.compile, torch.export): the bench's environment
# (bench/run.sh makes it; its torch wheel is several GB, so CI has none) or
# $MHA_TORCH2_PYTHON. The torch.compile backend's test runs only there.
torch2_python = os.environ.get("MHA_TORCH2_PYTHON") or os.path.join(
    config.mha_src_root, "bench", "work", "venv", "bin", "python")
if os.path.exists(torch2_python) and subprocess.call(
        [torch2_python, "-c", "import torch; assert hasattr(torch, 'compile')"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("torch2")
config.substitutions.append(("%torch2_python", torch2_python))
# The importers (python/mha_importers) from the source tree.
config.environment["PYTHONPATH"] = os.path.join(config.mha_src_root, "python")
config.substitutions.append(("%python", python))

# The host's CPU features as the kernel reports them, independently of LLVM's
# detection, for the tests that check mha-run's JIT targets this host.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                      if line.startswith("flags")), [])
except OSError:
    flags = []
if "avx512f" in flags:
    config.available_features.add("host-avx512f")
config.substitutions.append(
    ("%check_mha", "%s %s --mha-run %s" % (
        python,
        os.path.join(config.mha_src_root, "test", "Integration", "reference",
                     "check_mha.py"),
        os.path.join(config.mha_tools_dir, "mha-run"))))

# The same checks through mha-aot's executables instead of mha-run.
config.substitutions.append(
    ("%check_aot", "%s %s --mha-run %s --mha-aot %s" % (
        python,
        os.path.join(config.mha_src_root, "test", "Integration", "reference",
                     "check_mha.py"),
        os.path.join(config.mha_tools_dir, "mha-run"),
        os.path.join(config.mha_tools_dir, "mha-aot"))))

# GPU tests on Vulkan need the runtime (built where libvulkan-dev is) and a
# device: any Vulkan driver, Mesa's lavapipe (a CPU device) on machines with
# no GPU. The probe asks the loader for devices, as the runtime will, and
# for the extensions of each.
def vulkan_devices():
    import ctypes
    try:
        vulkan = ctypes.CDLL("libvulkan.so.1")
    except OSError:
        return []
    class InstanceCreateInfo(ctypes.Structure):
        _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p),
                    ("flags", ctypes.c_uint32),
                    ("pApplicationInfo", ctypes.c_void_p),
                    ("enabledLayerCount", ctypes.c_uint32),
                    ("ppEnabledLayerNames", ctypes.c_void_p),
                    ("enabledExtensionCount", ctypes.c_uint32),
                    ("ppEnabledExtensionNames", ctypes.c_void_p)]
    info = InstanceCreateInfo(1)  # VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
    instance = ctypes.c_void_p()
    if vulkan.vkCreateInstance(ctypes.byref(info), None,
                               ctypes.byref(instance)) != 0:
        return []
    count = ctypes.c_uint32(0)
    vulkan.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None)
    devices = (ctypes.c_void_p * count.value)()
    vulkan.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), devices)
    # Each device's extensions (VkExtensionProperties: a name of 256
    # characters and a version).
    class ExtensionProperties(ctypes.Structure):
        _fields_ = [("extensionName", ctypes.c_char * 256),
                    ("specVersion", ctypes.c_uint32)]
    extensions = []
    for device in devices[:count.value]:
        n = ctypes.c_uint32(0)
        vulkan.vkEnumerateDeviceExtensionProperties(
            ctypes.c_void_p(device), None, ctypes.byref(n), None)
        properties = (ExtensionProperties * n.value)()
        vulkan.vkEnumerateDeviceExtensionProperties(
            ctypes.c_void_p(device), None, ctypes.byref(n), properties)
        extensions.append({p.extensionName.decode() for p in properties})
    vulkan.vkDestroyInstance(instance, None)
    return extensions
vulkan_extensions = vulkan_devices()
if (os.path.exists(os.path.join(config.mha_lib_dir, "libmha_vulkan_runtime.so"))
        and vulkan_extensions):
    config.available_features.add("vulkan")
    # The cooperative-matrix kernels run natively where the device has them
    # (the runtime takes the first device, or $MHA_VULKAN_DEVICE's).
    if "VK_KHR_cooperative_matrix" in vulkan_extensions[0]:
        config.available_features.add("vulkan-cooperative-matrix")

# The CUDA runtime is built where a CUDA toolkit is; running its kernels
# needs the NVIDIA driver (libcuda.so.1) and a device, probed like Vulkan.
def cuda_device_count():
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value
if os.path.exists(os.path.join(config.mha_lib_dir, "libmha_cuda_runtime.so")):
    config.available_features.add("cuda-runtime")
    if cuda_device_count() > 0:
        config.available_features.add("cuda-device")

# ptxas (CUDA toolkit) assembles the PTX of the NVVM backend into cubins,
# with libdevice linked for math functions; gpu-module-to-binary finds both
# through $CUDA_ROOT (set here for the toolkit's usual place) or PATH.
import shutil
if os.path.exists("/usr/local/cuda/bin/ptxas") or shutil.which("ptxas"):
    config.available_features.add("ptxas")
    for var in ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"):
        if var in os.environ:
            config.environment[var] = os.environ[var]
    if os.path.exists("/usr/local/cuda/bin/ptxas"):
        config.environment.setdefault("CUDA_ROOT", "/usr/local/cuda")

# spirv-val (SPIRV-Tools) validates the SPIR-V of the Vulkan pipelines:
# $MHA_SPIRV_VAL, else the one on PATH (Debian's spirv-tools). Cooperative
# matrices (SPV_KHR_cooperative_matrix) need SPIRV-Tools from mid-2023 on,
# newer than Debian 12's 2023.1: a module declaring the capability tells
# (the older ones call its operand invalid).
def spirv_val_path():
    return os.environ.get("MHA_SPIRV_VAL") or shutil.which("spirv-val")


def spirv_val_knows_cooperative_matrix(tool):
    import struct
    import subprocess
    import tempfile
    # Header (SPIR-V 1.6), OpCapability Shader, OpCapability
    # CooperativeMatrixKHR.
    words = [0x07230203, 0x00010600, 0, 1, 0,
             (2 << 16) | 17, 1, (2 << 16) | 17, 6022]
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(struct.pack("<%dI" % len(words), *words))
        f.flush()
        run = subprocess.run([tool, f.name], capture_output=True, text=True)
    return "Invalid capability operand" not in run.stdout + run.stderr


spirv_val = spirv_val_path()
if spirv_val:
    config.available_features.add("spirv-val")
    config.substitutions.append(("%spirv_val", spirv_val))
    if spirv_val_knows_cooperative_matrix(spirv_val):
        config.available_features.add("spirv-val-cooperative-matrix")

# ThreadSanitizer for mha-aot --sanitize=thread: LLVM's TSan runtime (Debian's
# libclang-rt-22-dev) under the C compiler mha-aot uses, Archer (libomp-22-dev)
# beside libomp, and a kernel that lets a TSan program map its memory (some
# address randomization settings and sandboxes do not).
def tsan_runs():
    import tempfile
    if not os.path.exists(os.path.join(config.llvm_lib_dir, "libarcher.so")):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "tsan")
        try:
            built = subprocess.run(
                [config.c_compiler, "-fsanitize=thread", "-x", "c", "-", "-o", exe],
                input=b"int main(void) { return 0; }\n",
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return built.returncode == 0 and subprocess.call(
                [exe], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0
        except OSError:
            return False
if tsan_runs():
    config.available_features.add("tsan")

# Sanitizer builds: UBSan and ASan reports fail the test that triggers them.
# The stock mlir-opt does not carry the ASan runtime, so it cannot load an
# instrumented plugin: those tests are unsupported there.
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons the unused part of
# each slab when compiled with ASan, and our instrumented code and the
# uninstrumented libMLIR share the context's allocators (the storage of an
# mha attribute is allocated by our copy of the template, later ones by
# libMLIR's), so libMLIR's writes into a slab our copy poisoned would be
# reported as use-after-poison. ASan's own checks are unaffected.
if config.mha_sanitizers:
    config.available_features.add("asan")
    config.environment["ASAN_OPTIONS"] = (
        "abort_on_error=0:detect_leaks=1:allow_user_poisoning=0")
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    config.environment["LSAN_OPTIONS"] = "suppressions=" + os.path.join(
        config.mha_src_root, "test", "lsan.supp")

# Valgrind's memcheck sees what ASan cannot here: reads of freed memory made
# inside the uninstrumented libMLIR (an op's accessors called on an erased
# op). Not under ASan (the two do not mix).
if shutil.which("valgrind") and not config.mha_sanitizers:
    config.available_features.add("valgrind")
