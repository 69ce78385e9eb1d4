// The memory count `xtrain time` logs after its first iteration: what the net
// holds by kind (xtrain/net_memory_count.hpp), the convolutions' shared
// scratch, the solver's history, and what the process holds beyond them.
#include <sys/resource.h>

#include <map>
#include <set>
#include <sstream>

#include "command.hpp"
#include "xtrain/convolution_scratch.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/net_memory_count.hpp"

namespace xtrain::cli {
namespace {

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::size_t peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB
}

// The tops of a mixed-precision net by the type their values are stored in
// (each storage once: in-place layers and the memory plan share it).
void log_activations_by_precision(const Net& net) {
  std::map<NumberType, std::size_t> values_by_type;
  std::set<const void*> counted;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    for (std::size_t t = 0; t < net.top_vecs()[i].size(); ++t) {
      const Blob& top = *net.top_vecs()[i][t];
      if (top.data_memory() == nullptr || !counted.insert(top.data_memory().get()).second) continue;
      values_by_type[net.layers()[i]->top_storage(static_cast<int>(t))] += top.count();
    }
  }
  std::ostringstream line;
  line.setf(std::ios::fixed);
  line.precision(1);
  line << "Activations by storage type (MiB as the type's bytes):";
  const char* separator = " ";
  for (const auto& [type, values] : values_by_type) {
    line << separator << number_type_name(type) << " "
         << mib(values * static_cast<std::size_t>(number_type_bytes(type)));
    separator = ", ";
  }
  line << "; the 16-bit values are still held in fp32 arrays (docs/precision.md)";
  XLOG(INFO) << line.str();
}

}  // namespace

void log_memory_breakdown(const Net& net, std::size_t solver_history_bytes) {
  const NetMemoryCount count = count_net_memory(net);
  const std::size_t scratch = onednn_convolution_scratch_bytes();
  const std::size_t rounded_operands = rounded_operand_scratch_bytes();
  const std::size_t counted = count.total() + scratch + rounded_operands + solver_history_bytes;
  const std::size_t peak = peak_resident_bytes();
  std::ostringstream line;
  line.setf(std::ios::fixed);
  line.precision(1);
  line << "Memory after the first iteration (MiB): parameters " << mib(count.parameters)
       << ", parameter gradients " << mib(count.parameter_gradients);
  if (solver_history_bytes > 0) line << ", solver history " << mib(solver_history_bytes);
  line << ", activations " << mib(count.activations) << ", activation gradients "
       << mib(count.activation_gradients) << ", layer buffers " << mib(count.layer_buffer_total());
  if (!count.layer_buffers.empty()) {
    line << " (";
    const char* separator = "";
    for (const auto& [type, bytes] : count.layer_buffers) {
      line << separator << type << " " << mib(bytes);
      separator = ", ";
    }
    line << ")";
  }
  line << ", convolution scratch " << mib(scratch);
  if (rounded_operands > 0) line << ", operands rounded for fp32 kernels " << mib(rounded_operands);
  line << "; counted " << mib(counted) << " of peak resident " << mib(peak) << ", the rest "
       << mib(peak > counted ? peak - counted : 0)
       << " (code and libraries, BLAS buffers, freed blocks)";
  XLOG(INFO) << line.str();
  if (net.mixed_precision()) log_activations_by_precision(net);
}

}  // namespace xtrain::cli
