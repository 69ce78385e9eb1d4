// Counting GPUs. With no driver or no device the runtime answers with an
// error (cudaErrorInsufficientDriver / cudaErrorNoDevice); that is "no GPU",
// reported as a reason, not a crash.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <atomic>
#include <sstream>

#ifdef XTRAIN_HAVE_NCCL
#include <nccl.h>
#endif

#include "cuda/cuda_check.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/gpu_in_use.hpp"
#include "xtrain/device.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {
const char* compute_mode_name(int mode) {
  switch (mode) {
    case cudaComputeModeDefault:
      return "Default (shared)";
    case cudaComputeModeExclusiveProcess:
      return "Exclusive process";
    case cudaComputeModeProhibited:
      return "Prohibited";
    default:
      return "Unknown";
  }
}
std::string version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}
}  // namespace

namespace cuda {
namespace {
std::atomic<bool> any_gpu_in_use{false};
}
bool gpu_in_use() { return any_gpu_in_use.load(std::memory_order_relaxed); }
void mark_gpu_in_use() { any_gpu_in_use.store(true, std::memory_order_relaxed); }
}  // namespace cuda

std::string cuda_library_versions() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  std::ostringstream out;
  out << "CUDA runtime " << version_string(runtime);
  // cuDNN 9 numbers its versions major * 10000 + minor * 100 + patch.
  const std::size_t cudnn = cudnnGetVersion();
  out << ", cuDNN " << cudnn / 10000 << "." << cudnn % 10000 / 100 << "." << cudnn % 100;
  int major = 0;
  int minor = 0;
  int patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  out << ", cuBLAS " << major << "." << minor << "." << patch;
#ifdef XTRAIN_HAVE_NCCL
  // NCCL numbers them major * 10000 + minor * 100 + patch (since 2.9).
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    out << ", NCCL " << nccl / 10000 << "." << nccl % 10000 / 100 << "." << nccl % 100;
  }
#endif
  return out.str();
}

int cuda_device_count(std::string* why_none) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (why_none) {
      int runtime = 0;
      cudaRuntimeGetVersion(&runtime);
      *why_none =
          status == cudaErrorInsufficientDriver
              ? "no usable GPU: no NVIDIA driver is loaded, or it is older than this CUDA " +
                    version_string(runtime) + " runtime needs"
          : status == cudaErrorNoDevice
              ? std::string("no CUDA device is visible (check CUDA_VISIBLE_DEVICES)")
              : std::string("no usable GPU: ") + cudaGetErrorString(status);
    }
    return 0;
  }
  if (count == 0 && why_none) *why_none = "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
  return count;
}

std::string cuda_device_description(int id) {
  std::string why_none;
  const int count = cuda_device_count(&why_none);
  XTRAIN_CHECK(count > 0, why_none);
  XTRAIN_CHECK(id >= 0 && id < count, "GPU ", id, " does not exist (", count, " visible)");
  cudaDeviceProp prop{};
  const cudaError_t status = cudaGetDeviceProperties(&prop, id);
  XTRAIN_CHECK(status == cudaSuccess, "cannot query GPU ", id, ": ", cudaGetErrorString(status));
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  // An exclusive-process GPU (as LSF sets them) may be taken by another job.
  int compute_mode = 0;
  cudaDeviceGetAttribute(&compute_mode, cudaDevAttrComputeMode, id);
  std::ostringstream out;
  out << "Device id:                     " << id << "\n"
      << "Name:                          " << prop.name << "\n"
      << "Compute capability:            " << prop.major << "." << prop.minor << "\n"
      << "Total global memory:           " << prop.totalGlobalMem << " bytes ("
      << prop.totalGlobalMem / (1 << 20) << " MiB)\n"
      << "Multiprocessors:               " << prop.multiProcessorCount << "\n"
      << "Compute mode:                  " << compute_mode_name(compute_mode) << "\n"
      << "Driver version:                " << version_string(driver) << "\n"
      << "Runtime version:               " << version_string(runtime) << "\n";
  return out.str();
}

void synchronize(const Device& device) {
  if (device.is_gpu()) cuda::synchronize();
}

void use_device(const Device& device) {
  if (!device.is_gpu()) return;
  // Checked once per thread and device; a data layer's workers call this
  // for every batch they upload.
  thread_local int checked_device = -1;
  if (device.id == checked_device) {
    XTRAIN_CUDA_CHECK(cudaSetDevice(device.id));
    return;
  }
  std::string why_none;
  const int count = cuda_device_count(&why_none);
  XTRAIN_CHECK(count > 0, device.to_string(), " was asked for, but there is ", why_none,
               "; run on the CPU instead (no --gpu, and solver_mode: CPU in the solver)");
  XTRAIN_CHECK(device.id >= 0 && device.id < count, device.to_string(), " does not exist (", count,
               " visible; CUDA_VISIBLE_DEVICES renumbers them from 0)");
  cudaError_t status = cudaSetDevice(device.id);
  // cudaSetDevice is lazy; the first call that needs the context creates it,
  // and that is where an exclusive-process GPU held by another job fails.
  if (status == cudaSuccess) status = cudaFree(nullptr);
  if (status == cudaErrorDevicesUnavailable) {
    cudaGetLastError();
    throw Error(device.to_string() +
                " is busy: it is in exclusive-process compute mode and another process holds "
                "it (nvidia-smi shows which); ask the scheduler for a free GPU, or pick another "
                "one with --gpu or CUDA_VISIBLE_DEVICES");
  }
  XTRAIN_CHECK(status == cudaSuccess, "cannot use ", device.to_string(), ": ",
               cudaGetErrorString(status));
  cuda::context();  // the thread's stream, now
  cuda::mark_gpu_in_use();
  checked_device = device.id;
}

}  // namespace xtrain
