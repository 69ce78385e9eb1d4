#include "layers/convolution_choice_cache.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "xtrain/atomic_file.hpp"
#include "xtrain/cpu_convolution_options.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

constexpr const char* kHeader = "# xtrain CPU convolution choices (timed): machine, shape, choice";

// "AMD EPYC 9R14 (family 25 model 17)" from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, name, family, model;
  auto value_of = [](const std::string& text) {
    const std::size_t colon = text.find(':');
    return colon == std::string::npos ? std::string()
                                      : text.substr(text.find_first_not_of(" \t", colon + 1));
  };
  while (std::getline(cpuinfo, line) && (name.empty() || family.empty() || model.empty())) {
    if (line.rfind("model name", 0) == 0 && name.empty()) name = value_of(line);
    if (line.rfind("cpu family", 0) == 0 && family.empty()) family = value_of(line);
    if (line.rfind("model\t", 0) == 0 && model.empty()) model = value_of(line);
  }
  if (name.empty()) return "unknown CPU";
  return name + " (family " + family + " model " + model + ")";
}

struct CacheState {
  std::mutex mutex;
  // Choices of this process (also those the file could not take), by file and key.
  std::map<std::string, std::string> remembered;
  std::set<std::string> files_reported;  // unwritable files warned about once
};

CacheState& state() {
  static CacheState* cache = new CacheState;  // never destroyed: used until exit
  return *cache;
}

// The file's lines as key -> choice, key = machine TAB shape.
std::map<std::string, std::string> read_cache_file(const std::string& path) {
  std::map<std::string, std::string> entries;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t last_tab = line.rfind('\t');
    if (last_tab == std::string::npos || line.find('\t') == last_tab) continue;  // not 3 fields
    entries[line.substr(0, last_tab)] = line.substr(last_tab + 1);
  }
  return entries;
}

// A bf16 layer's choice (its candidates include bf16 kernels) is kept apart
// from the fp32 one of the same shape.
std::string entry_key(const ConvolutionShape& shape, NumberType operands) {
  return convolution_machine_key() + "\t" + shape.to_string() +
         (operands == NumberType::kFloat32
              ? ""
              : std::string(", operands ") + number_type_name(operands));
}

}  // namespace

std::string convolution_machine_key() {
  static const std::string model = cpu_model();
  return model + "; " + std::to_string(cpu_threads()) + " threads; " + onednn_kernel_set() + "; " +
         own_convolution_engines();
}

std::optional<ConvolutionChoice> cached_convolution_choice(const ConvolutionShape& shape,
                                                           NumberType operands) {
  const std::string path = cpu_convolution_cache_file();
  const std::string key = entry_key(shape, operands);
  CacheState& cache = state();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const auto remembered = cache.remembered.find(path + "\n" + key);
  if (remembered != cache.remembered.end()) return ConvolutionChoice::parse(remembered->second);
  if (path.empty()) return std::nullopt;
  const std::map<std::string, std::string> entries = read_cache_file(path);
  const auto entry = entries.find(key);
  if (entry == entries.end()) return std::nullopt;
  return ConvolutionChoice::parse(entry->second);
}

void cache_convolution_choice(const ConvolutionShape& shape, NumberType operands,
                              const ConvolutionChoice& choice) {
  const std::string path = cpu_convolution_cache_file();
  const std::string key = entry_key(shape, operands);
  CacheState& cache = state();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.remembered[path + "\n" + key] = choice.to_string();
  if (path.empty()) return;
  try {
    // Re-read: another process may have added choices since.
    std::map<std::string, std::string> entries = read_cache_file(path);
    entries[key] = choice.to_string();
    std::ostringstream text;
    text << kHeader << "\n";
    for (const auto& [entry_key, entry_choice] : entries)
      text << entry_key << "\t" << entry_choice << "\n";
    std::filesystem::create_directories(directory_of(path));
    write_file_atomically(path, text.str());
  } catch (const std::exception& error) {
    if (cache.files_reported.insert(path).second) {
      XLOG(WARNING) << "cannot keep the timed convolution choices in " << path << " ("
                    << error.what()
                    << "); they last for this run only. Set XTRAIN_CACHE_DIR to a writable folder "
                       "to keep them.";
    }
  }
}

}  // namespace xtrain
