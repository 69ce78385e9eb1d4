#include "core/openmp_spin.hpp"

#include <link.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/cpu_load.hpp"

namespace xtrain {

std::string user_openmp_wait_setting(const std::function<const char*(const char*)>& lookup) {
  std::string setting;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    const char* value = lookup(name);
    if (value == nullptr) continue;
    setting += (setting.empty() ? "" : ", ") + std::string(name) + "=" + value;
  }
  return setting;
}

SpinLength choose_spin_length(SpinLength current, double neighbours, int cpus, int threads) {
  const double taken_from_us = cpus_taken_from_threads(neighbours, cpus, threads);
  const double long_limit = current == SpinLength::kLong ? 0.5 : 0.25;
  if (taken_from_us <= long_limit) return SpinLength::kLong;
  const double none_limit = current == SpinLength::kNone ? 0.75 : 1.0;
  return taken_from_us > none_limit ? SpinLength::kNone : SpinLength::kShort;
}

std::uint64_t spin_polls(SpinLength length) {
  switch (length) {
    case SpinLength::kNone:
      return kNoSpin;
    case SpinLength::kShort:
      return kShortSpin;
    case SpinLength::kLong:
      return kLongSpin;
  }
  return kShortSpin;
}

std::vector<std::uint64_t*> find_words(void* begin, void* end, std::uint64_t value) {
  std::vector<std::uint64_t*> found;
  auto address = reinterpret_cast<std::uintptr_t>(begin);
  address = (address + alignof(std::uint64_t) - 1) & ~std::uintptr_t{alignof(std::uint64_t) - 1};
  const auto last = reinterpret_cast<std::uintptr_t>(end);
  for (; address + sizeof(std::uint64_t) <= last; address += sizeof(std::uint64_t)) {
    std::uint64_t word;
    std::memcpy(&word, reinterpret_cast<const void*>(address), sizeof(word));
    if (word == value) found.push_back(reinterpret_cast<std::uint64_t*>(address));
  }
  return found;
}

bool is_libgomp_file(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.rfind("libgomp.so", 0) == 0) return true;
  // auditwheel's copy: "libgomp-" + 8 hex digits + ".so...".
  if (name.rfind("libgomp-", 0) != 0 || name.size() < 19 || name.compare(16, 3, ".so") != 0) {
    return false;
  }
  return std::all_of(name.begin() + 8, name.begin() + 16,
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

namespace {

struct Search {
  std::vector<std::uint64_t*> found;
  int libraries = 0;
};

// Every libgomp word equal to its default spin count, in its writable
// segments less the part made read-only after relocation (RELRO): the
// variable is in .bss, and a write into RELRO would fault.
int search_libgomp(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (info->dlpi_name == nullptr || !is_libgomp_file(info->dlpi_name)) return 0;
  ++search->libraries;
  std::uintptr_t relro_begin = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_GNU_RELRO) {
      relro_begin = info->dlpi_addr + header.p_vaddr;
      relro_end = relro_begin + header.p_memsz;
    }
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_W) == 0) continue;
    std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    const std::uintptr_t end = begin + header.p_memsz;
    // RELRO is the start of the writable segment where there is one.
    if (relro_end > begin && relro_begin <= begin) begin = std::min(relro_end, end);
    for (std::uint64_t* word : find_words(reinterpret_cast<void*>(begin),
                                          reinterpret_cast<void*>(end), kLibgompDefaultSpin)) {
      search->found.push_back(word);
    }
  }
  return 0;
}

std::uint64_t* search_libgomp_spin_count() {
  Search search;
  dl_iterate_phdr(search_libgomp, &search);
  if (search.libraries != 1 || search.found.size() != 1) return nullptr;
  return search.found.front();
}

}  // namespace

std::uint64_t* libgomp_spin_count() {
  static std::uint64_t* const spin_count = search_libgomp_spin_count();
  return spin_count;
}

void set_libgomp_spin_count(std::uint64_t* spin_count, std::uint64_t polls) {
  __atomic_store_n(spin_count, polls, __ATOMIC_RELAXED);
}

}  // namespace xtrain
