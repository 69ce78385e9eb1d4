// An LMDB's data.mdb as the Data layer and compute_mean read it: opened for
// reading (which checks the tree, src/data/lmdb_tree_check.hpp), then every
// record walked in key order with LmdbCursor, reading every byte of its key
// and value.
//
// The promise under test: a database the check lets through never sends
// LMDB outside the file or the map. So, unlike in the tools, a fault inside
// LMDB must not end in LmdbFaultGuard's one-line exit here: the guard's
// signal handler is taken out again once installed, and a fault is the
// sanitizer's report, a finding. The walk must also find as many records as
// the database says it holds (what an epoch is made of).
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "data/lmdb_fault_guard.hpp"
#include "fuzz_support.hpp"
#include "xtrain/lmdb_database.hpp"

namespace {

// Keeps the reads of every key and value byte from being optimised away.
volatile unsigned read_bytes_sum = 0;

std::string database_directory() { return xtrain_fuzz::scratch_directory() + "/fuzzed_lmdb"; }

// Installs LmdbFaultGuard's handlers (once per process), then puts back the
// ones that were there before: the sanitizer's.
void keep_faults_as_findings() {
  struct sigaction segv {}, bus {};
  sigaction(SIGSEGV, nullptr, &segv);
  sigaction(SIGBUS, nullptr, &bus);
  { const xtrain::LmdbFaultGuard install("installing the handler"); }
  sigaction(SIGSEGV, &segv, nullptr);
  sigaction(SIGBUS, &bus, nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xtrain_fuzz::prepare_process();
  keep_faults_as_findings();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A fresh directory each time: no lock file of an earlier input.
  const std::string directory = database_directory();
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  {
    std::ofstream out(directory + "/data.mdb", std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  xtrain_fuzz::expect_only_xtrain_errors([&] {
    const auto database = xtrain::LmdbDatabase::open_for_reading(directory);
    const std::size_t claimed = database->num_records();
    xtrain::LmdbCursor cursor(database);
    std::size_t seen = 0;
    unsigned checksum = 0;
    for (; cursor.valid(); cursor.next(), ++seen) {
      for (char byte : cursor.key()) checksum += static_cast<unsigned char>(byte);
      for (char byte : cursor.value()) checksum += static_cast<unsigned char>(byte);
    }
    if (seen != claimed) std::abort();  // the check let a wrong count through
    read_bytes_sum = checksum;
  });
  return 0;
}
