// LMDB access: an environment (a database directory holding data.mdb and
// lock.mdb, the layout Caffe's tools write), a read cursor, and a batching
// writer.
//
// Reading opens the environment read-only (MDB_RDONLY | MDB_NOTLS), so a
// dataset on a read-only or shared filesystem works; if the lock file cannot
// be created (a read-only directory) it falls back to MDB_NOLOCK. Readers of
// the same directory within one process share one environment, because LMDB
// forbids opening the same environment twice in a process.
//
// Writing starts with a small memory map and doubles it whenever LMDB reports
// MDB_MAP_FULL, replaying the transaction; the user never sees MDB_MAP_FULL
// and the data file stays as large as the data (no huge sparse file).
//
// Every error names the database path and carries LMDB's own reason. A
// database opened for reading has its tree checked first, so that damage
// gives an error rather than a fault inside LMDB (lmdb_tree_check.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xtrain/export.hpp"

// From <lmdb.h>; declared here so that users of this header need not see it.
struct MDB_env;
struct MDB_txn;
struct MDB_cursor;

namespace xtrain {

class XTRAIN_API LmdbDatabase {
 public:
  // 64 MiB: enough for MNIST in one go, small enough for any filesystem.
  static constexpr std::size_t kDefaultInitialMapSize = std::size_t{64} << 20;

  // Throws xtrain::Error if `path` is not an LMDB directory.
  static std::shared_ptr<LmdbDatabase> open_for_reading(const std::string& path);
  // Creates the directory (and missing parents) if needed; an existing
  // database is opened for appending. The map starts at `initial_map_size`
  // (rounded up to whole pages by LMDB) and grows as needed.
  static std::shared_ptr<LmdbDatabase> open_for_writing(
      const std::string& path, std::size_t initial_map_size = kDefaultInitialMapSize);

  ~LmdbDatabase();
  LmdbDatabase(const LmdbDatabase&) = delete;
  LmdbDatabase& operator=(const LmdbDatabase&) = delete;

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }
  // Number of key/value records in the database.
  std::size_t num_records() const;
  // Bytes of the pages that hold the records (keys and values with LMDB's
  // headers and slack): a little more than the records themselves.
  std::size_t record_page_bytes() const;
  // Current size of the memory map in bytes.
  std::size_t map_size() const;
  // Doubles the memory map (writers only; no transaction may be active).
  void grow_map();

  MDB_env* env() const { return env_; }
  unsigned int dbi() const { return dbi_; }

  // "LMDB '<path>': <what>: <mdb_strerror(code)>"
  [[noreturn]] void fail(const std::string& what, int code) const;

 private:
  LmdbDatabase(std::string path, bool read_only) : path_(std::move(path)), read_only_(read_only) {}
  // Walks the tree a reader will see (lmdb_tree_check.hpp); throws if it is
  // damaged.
  void check_tree(bool uses_lock_file) const;

  std::string path_;
  bool read_only_;
  MDB_env* env_ = nullptr;
  unsigned int dbi_ = 0;
};

// Walks the records in key order inside one read transaction, which it keeps
// for its whole life (so the keys and values it returns stay valid until the
// next move). Not for concurrent use; it may be handed from one thread to
// another (the environment is opened with MDB_NOTLS).
class XTRAIN_API LmdbCursor {
 public:
  // Positions the cursor on the first record (invalid if the DB is empty).
  explicit LmdbCursor(std::shared_ptr<LmdbDatabase> database);
  ~LmdbCursor();
  LmdbCursor(const LmdbCursor&) = delete;
  LmdbCursor& operator=(const LmdbCursor&) = delete;

  void seek_to_first();
  // Moves to the next record; past the last one the cursor becomes invalid.
  void next();
  bool valid() const { return valid_; }
  std::string_view key() const;
  std::string_view value() const;
  const LmdbDatabase& database() const { return *database_; }

 private:
  void move(int operation);

  std::shared_ptr<LmdbDatabase> database_;
  MDB_txn* txn_ = nullptr;
  MDB_cursor* cursor_ = nullptr;
  bool valid_ = false;
  std::string_view key_;
  std::string_view value_;
};

// Buffers puts and writes them in transactions of `records_per_transaction`.
// Call commit() to write the rest; records not committed when the writer is
// destroyed are discarded (with a warning), never half-written.
class XTRAIN_API LmdbWriter {
 public:
  static constexpr std::size_t kDefaultRecordsPerTransaction = 1000;

  explicit LmdbWriter(std::shared_ptr<LmdbDatabase> database,
                      std::size_t records_per_transaction = kDefaultRecordsPerTransaction);
  ~LmdbWriter();
  LmdbWriter(const LmdbWriter&) = delete;
  LmdbWriter& operator=(const LmdbWriter&) = delete;

  // An existing key is overwritten, as with Caffe's writers.
  void put(std::string key, std::string value);
  void commit();
  // Records committed so far.
  std::size_t num_committed() const { return num_committed_; }
  const LmdbDatabase& database() const { return *database_; }

 private:
  // One attempt at writing the pending records; false on MDB_MAP_FULL.
  bool try_commit();

  std::shared_ptr<LmdbDatabase> database_;
  std::size_t records_per_transaction_;
  std::vector<std::pair<std::string, std::string>> pending_;
  std::size_t num_committed_ = 0;
};

}  // namespace xtrain
