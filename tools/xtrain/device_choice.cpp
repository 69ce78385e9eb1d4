// Which devices a command computes on: the CPU, the GPUs --gpu names, or, in
// a job of several ranks, the one GPU of this rank.
//
// The GPU is decided from the flags and the environment alone, before the
// process makes any CUDA call that could create a context: on clusters whose
// GPUs are in exclusive-process mode (LSF and Slurm sites set this) a rank
// that touched GPU 0 first would hold it, and the rank that owns GPU 0 would
// then fail with "busy". Only --gpu=all, in a single process, has to ask CUDA
// how many GPUs there are (a count creates no context).
#include <cstdlib>
#include <sstream>

#include "command.hpp"
#include "xtrain/device.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::cli {
namespace {

// --gpu's syntax, checked before anything is asked of CUDA.
struct GpuRequest {
  bool all = false;
  std::vector<int> ids;
};

GpuRequest parse_gpu_request(const std::string& gpu_flag) {
  GpuRequest request;
  if (gpu_flag == "all") {
    request.all = true;
    return request;
  }
  for (const std::string& part : split_commas(gpu_flag)) {
    std::size_t used = 0;
    int id = -1;
    try {
      id = std::stoi(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    XTRAIN_CHECK(used == part.size() && id >= 0, "--gpu=", gpu_flag, ": '", part,
                 "' is not a GPU id (use e.g. 0 or 0,1 or all)");
    request.ids.push_back(id);
  }
  XTRAIN_CHECK(!request.ids.empty(), "--gpu=", gpu_flag,
               " names no GPU (use e.g. 0 or 0,1 or all)");
  return request;
}

// How many GPUs CUDA_VISIBLE_DEVICES lets this process see, read without
// CUDA; -1 when it is unset (then every GPU of the node is visible).
int visible_gpus_from_environment() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return -1;
  return static_cast<int>(split_commas(visible).size());
}

}  // namespace

int gpu_of_local_rank(int local_rank) {
  const int visible = visible_gpus_from_environment();
  // The launcher bound each rank to its own GPUs (Slurm's --gpus-per-task,
  // a wrapper script): the local rank picks among those few. Otherwise the
  // node's GPUs are all visible and local rank r takes GPU r.
  return visible > 0 ? local_rank % visible : local_rank;
}

std::vector<int> parse_gpu_ids(const std::string& gpu_flag, int available) {
  const GpuRequest request = parse_gpu_request(gpu_flag);
  std::vector<int> ids;
  if (request.all) {
    for (int i = 0; i < available; ++i) ids.push_back(i);
    return ids;
  }
  for (const int id : request.ids) {
    XTRAIN_CHECK(id < available, "GPU ", id, " does not exist (", available,
                 " visible; CUDA_VISIBLE_DEVICES renumbers them from 0)");
  }
  return request.ids;
}

namespace {

// Data-parallel runs load every CUDA module at start (docs/cuda.md, "Several
// GPUs"): a kernel first launched in a later iteration (after a reshape)
// would be loaded while an NCCL sum spins on the device, and loading can
// wait for that sum, which waits for this GPU. The driver reads the variable
// once, at its first call, so it is set before any; a user's own setting
// stays.
void load_cuda_modules_eagerly() {
  if (std::getenv("CUDA_MODULE_LOADING") != nullptr) return;
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  XLOG(INFO) << "CUDA_MODULE_LOADING=EAGER for data-parallel training: every kernel is loaded "
                "at start (set CUDA_MODULE_LOADING yourself to choose otherwise)";
}

}  // namespace

std::vector<Device> choose_devices(const std::string& gpu_flag, bool solver_wants_gpu,
                                   int solver_device_id, const ProcessGroup* job) {
  if (gpu_flag.empty() && !solver_wants_gpu) return {Device::cpu()};
  const std::string asked = gpu_flag.empty() ? "solver_mode: GPU" : "--gpu=" + gpu_flag;
  const std::string ids_asked = gpu_flag.empty() ? std::to_string(solver_device_id) : gpu_flag;
  const GpuRequest request = parse_gpu_request(ids_asked);
  if (request.all || request.ids.size() > 1 || (job != nullptr && job->size > 1)) {
    load_cuda_modules_eagerly();
  }
  // Counting the GPUs creates no context on any of them.
  std::string why_none;
  const int available = cuda_device_count(&why_none);
  XTRAIN_CHECK(available > 0, asked, " asks for a GPU, but ", why_none,
               "; run on the CPU instead (no --gpu, and solver_mode: CPU in the solver)");

  if (job != nullptr && job->size > 1) {
    XTRAIN_CHECK(!request.all && request.ids.size() == 1, asked,
                 " names several GPUs, but this process is one rank of a job of several "
                 "(mpirun, srun): give each rank one GPU (--gpu=0: the local rank picks among "
                 "the visible ones) and start one rank per GPU");
    const std::string rank = detail::concat("rank ", job->rank, " of ", job->size, " (local rank ",
                                            job->local_rank, ", ", job->launcher, ")");
    const Device gpu = Device::gpu(gpu_of_local_rank(job->local_rank));
    XTRAIN_CHECK(gpu.id < available, rank, " would take ", gpu.to_string(), ", but only ",
                 available,
                 " GPUs are visible: start at most one rank per GPU on each node, or bind each "
                 "rank to a GPU of its own (Slurm: --gpus-per-task=1)");
    try {
      use_device(gpu);
    } catch (const Error& error) {
      throw Error(detail::concat(rank, " takes ", gpu.to_string(), ": ", error.what()));
    }
    return {gpu};
  }

  const std::vector<int> ids = parse_gpu_ids(ids_asked, available);
  std::vector<Device> devices;
  for (const int id : ids) {
    for (const Device& chosen : devices) {
      XTRAIN_CHECK(chosen.id != id, asked, " names GPU ", id, " twice; give each GPU once");
    }
    devices.push_back(Device::gpu(id));
  }
  // Selects each now, so that a busy (exclusive-mode) GPU is reported before
  // any work starts; the first stays this thread's.
  for (const Device& device : devices) {
    try {
      use_device(device);
    } catch (const Error& error) {
      throw Error(detail::concat(asked, ": ", error.what()));
    }
  }
  use_device(devices.front());
  return devices;
}

Device choose_device(const std::string& gpu_flag, bool solver_wants_gpu, int solver_device_id) {
  const std::vector<Device> devices =
      choose_devices(gpu_flag, solver_wants_gpu, solver_device_id, nullptr);
  XTRAIN_CHECK(devices.size() == 1, "--gpu=", gpu_flag,
               ": this command runs on one GPU; give one id (only train uses several)");
  return devices.front();
}

}  // namespace xtrain::cli
