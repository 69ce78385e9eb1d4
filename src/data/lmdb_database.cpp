#include "xtrain/lmdb_database.hpp"

#include <lmdb.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "data/lmdb_fault_guard.hpp"
#include "data/lmdb_tree_check.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHowToCreate =
    " — create it with convert_mnist_data or convert_imageset, or fix the path";

// Errors LMDB reports when the lock file cannot be created next to data.mdb.
bool is_permission_error(int code) { return code == EACCES || code == EROFS || code == EPERM; }

// Explains the usual ways a read path is wrong before LMDB gets to say
// "No such file or directory" about a file the user never named.
void check_looks_like_lmdb(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  XTRAIN_CHECK(fs::exists(status), "cannot open LMDB '", path, "': ", std::strerror(ENOENT),
               kHowToCreate);
  XTRAIN_CHECK(!fs::is_regular_file(status), "cannot open LMDB '", path,
               "': it is a file, but an LMDB is a directory holding data.mdb and lock.mdb; "
               "give the directory");
  XTRAIN_CHECK(fs::is_directory(status), "cannot open LMDB '", path, "': not a directory");
  if (fs::exists(fs::path(path) / "data.mdb", error)) return;
  XTRAIN_CHECK(!fs::exists(fs::path(path) / "CURRENT", error), "cannot open LMDB '", path,
               "': it looks like a LevelDB (a CURRENT file but no data.mdb); LevelDB is not "
               "supported, convert the DB to LMDB");
  XTRAIN_CHECK(false, "cannot open LMDB '", path, "': the directory has no data.mdb", kHowToCreate);
}

// Opens `path` with `flags`; on failure closes the handle (as LMDB requires)
// and returns the error code.
int open_environment(const std::string& path, unsigned int flags, std::size_t map_size,
                     MDB_env** env) {
  int rc = mdb_env_create(env);
  if (rc != MDB_SUCCESS) return rc;
  if (map_size > 0) {
    rc = mdb_env_set_mapsize(*env, map_size);
    if (rc != MDB_SUCCESS) {
      mdb_env_close(*env);
      *env = nullptr;
      return rc;
    }
  }
  rc = mdb_env_open(*env, path.c_str(), flags, 0664);
  if (rc != MDB_SUCCESS) {
    mdb_env_close(*env);
    *env = nullptr;
  }
  return rc;
}

// Opens the main (unnamed) database of `env` into *dbi, in a read or a
// write transaction (`txn_flags`); committing it, not aborting it, keeps the
// handle open. Errors go through database.fail.
void open_main_database(const LmdbDatabase& database, MDB_env* env, unsigned int txn_flags,
                        MDB_dbi* dbi) {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env, nullptr, txn_flags, &txn);
  if (rc != MDB_SUCCESS) {
    database.fail((txn_flags & MDB_RDONLY) != 0 ? "cannot begin a read transaction"
                                                : "cannot begin a write transaction",
                  rc);
  }
  rc = mdb_dbi_open(txn, nullptr, 0, dbi);
  if (rc != MDB_SUCCESS) {
    mdb_txn_abort(txn);
    database.fail("cannot open the main database", rc);
  }
  rc = mdb_txn_commit(txn);
  if (rc != MDB_SUCCESS) database.fail("cannot open the main database", rc);
}

// LMDB allows one environment per directory per process (a second one would
// break its file locks), so readers of the same directory share one. The
// data file's identity tells a database apart from a newer one written in its
// place.
struct CachedReader {
  std::weak_ptr<LmdbDatabase> database;
  dev_t device = 0;
  ino_t inode = 0;
};
std::mutex& reader_cache_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, CachedReader>& reader_cache() {
  static std::map<std::string, CachedReader> cache;
  return cache;
}

}  // namespace

void LmdbDatabase::fail(const std::string& what, int code) const {
  const bool damaged = code == MDB_CORRUPTED || code == MDB_PAGE_NOTFOUND || code == MDB_INVALID;
  throw Error("LMDB '" + path_ + "': " + what + ": " + mdb_strerror(code) +
              (damaged ? "; the database is damaged: rebuild it (convert_imageset, "
                         "convert_mnist_data)"
                       : ""));
}

std::shared_ptr<LmdbDatabase> LmdbDatabase::open_for_reading(const std::string& path) {
  check_looks_like_lmdb(path);
  std::error_code error;
  std::string cache_key = fs::canonical(path, error).string();
  if (error) cache_key = path;

  struct stat data_file {};
  ::stat((fs::path(path) / "data.mdb").c_str(), &data_file);

  std::lock_guard<std::mutex> lock(reader_cache_mutex());
  auto& cache = reader_cache();
  if (auto found = cache.find(cache_key); found != cache.end()) {
    const CachedReader& cached = found->second;
    auto database = cached.database.lock();
    if (database && cached.device == data_file.st_dev && cached.inode == data_file.st_ino) {
      return database;
    }
  }

  std::shared_ptr<LmdbDatabase> database(new LmdbDatabase(path, /*read_only=*/true));
  check_lmdb_meta_pages(path);
  int rc = open_environment(path, MDB_RDONLY | MDB_NOTLS, 0, &database->env_);
  bool without_lock = false;
  if (is_permission_error(rc)) {
    // No lock file and no right to create one: read without locking, which
    // is safe as long as nobody writes the database meanwhile.
    XLOG(INFO) << "LMDB '" << path << "': cannot create lock.mdb (" << mdb_strerror(rc)
               << "); reading without locks";
    rc = open_environment(path, MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK, 0, &database->env_);
    without_lock = true;
  }
  if (rc != MDB_SUCCESS) {
    throw Error("cannot open LMDB '" + path + "': " + mdb_strerror(rc) + kHowToCreate);
  }
  open_main_database(*database, database->env_, MDB_RDONLY, &database->dbi_);
  database->check_tree(/*uses_lock_file=*/!without_lock);

  for (auto it = cache.begin(); it != cache.end();) {
    it = it->second.database.expired() ? cache.erase(it) : std::next(it);
  }
  cache[cache_key] = CachedReader{database, data_file.st_dev, data_file.st_ino};
  return database;
}

std::shared_ptr<LmdbDatabase> LmdbDatabase::open_for_writing(const std::string& path,
                                                             std::size_t initial_map_size) {
  std::error_code error;
  fs::create_directories(path, error);
  XTRAIN_CHECK(!error, "cannot create the LMDB directory '", path, "': ", error.message());

  std::shared_ptr<LmdbDatabase> database(new LmdbDatabase(path, /*read_only=*/false));
  const int rc = open_environment(path, 0, initial_map_size, &database->env_);
  if (rc != MDB_SUCCESS) {
    throw Error("cannot open LMDB '" + path + "' for writing: " + mdb_strerror(rc));
  }
  open_main_database(*database, database->env_, 0, &database->dbi_);
  return database;
}

void LmdbDatabase::check_tree(bool uses_lock_file) const {
  // The snapshot a read transaction sees, held while it is checked (a
  // writer cannot reuse its pages meanwhile).
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
  if (rc != MDB_SUCCESS) fail("cannot begin a read transaction", rc);
  MDB_stat stat;
  MDB_envinfo info;
  rc = mdb_env_stat(env_, &stat);
  if (rc == MDB_SUCCESS) rc = mdb_env_info(env_, &info);
  if (rc != MDB_SUCCESS) {
    mdb_txn_abort(txn);
    fail("cannot query the environment", rc);
  }
  LmdbSnapshotPlace place;
  place.page_size = stat.ms_psize;
  place.map_size = info.me_mapsize;
  place.txn_id = mdb_txn_id(txn);
  place.uses_lock_file = uses_lock_file;
  try {
    (void)check_lmdb_tree(path_, place);
  } catch (...) {
    mdb_txn_abort(txn);
    throw;
  }
  mdb_txn_abort(txn);
}

LmdbDatabase::~LmdbDatabase() {
  if (env_ == nullptr) return;
  mdb_dbi_close(env_, dbi_);
  mdb_env_close(env_);
}

namespace {

// The database's statistics, read in a read transaction: the snapshot a
// cursor walks (the meta page mdb_env_stat reads can differ in a damaged
// file).
MDB_stat read_statistics(MDB_env* env, MDB_dbi dbi, int* rc) {
  MDB_stat stat{};
  MDB_txn* txn = nullptr;
  *rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn);
  if (*rc != MDB_SUCCESS) return stat;
  *rc = mdb_stat(txn, dbi, &stat);
  mdb_txn_abort(txn);
  return stat;
}

}  // namespace

std::size_t LmdbDatabase::num_records() const {
  int rc = MDB_SUCCESS;
  const MDB_stat stat = read_statistics(env_, dbi_, &rc);
  if (rc != MDB_SUCCESS) fail("cannot count the records", rc);
  return stat.ms_entries;
}

std::size_t LmdbDatabase::record_page_bytes() const {
  int rc = MDB_SUCCESS;
  const MDB_stat stat = read_statistics(env_, dbi_, &rc);
  if (rc != MDB_SUCCESS) fail("cannot measure the records", rc);
  return static_cast<std::size_t>(stat.ms_psize) *
         (stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages);
}

std::size_t LmdbDatabase::map_size() const {
  MDB_envinfo info;
  const int rc = mdb_env_info(env_, &info);
  if (rc != MDB_SUCCESS) fail("cannot query the map size", rc);
  return info.me_mapsize;
}

void LmdbDatabase::grow_map() {
  XTRAIN_ASSERT(!read_only_, "grow_map() on a read-only LMDB");
  const std::size_t new_size = map_size() * 2;
  const int rc = mdb_env_set_mapsize(env_, new_size);
  if (rc != MDB_SUCCESS) {
    fail("cannot grow the memory map to " + std::to_string(new_size >> 20) + " MiB", rc);
  }
}

// ---------------------------------------------------------------------------

namespace {

// LMDB's default largest key (MDB_MAXKEYSIZE).
constexpr std::size_t kLargestKey = 511;

// Reads one byte of every 4 KiB page of [data, data + size).
void touch_pages(const void* data, std::size_t size) {
  if (size == 0) return;
  const volatile unsigned char* bytes = static_cast<const volatile unsigned char*>(data);
  unsigned char sink = 0;
  for (std::size_t at = 0; at < size; at += 4096) sink ^= bytes[at];
  sink ^= bytes[size - 1];
  (void)sink;
}

}  // namespace

LmdbCursor::LmdbCursor(std::shared_ptr<LmdbDatabase> database) : database_(std::move(database)) {
  MDB_env* env = database_->env();
  int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn_);
  if (rc == MDB_MAP_RESIZED) {
    // Another process grew the database since we opened it: adopt its size.
    rc = mdb_env_set_mapsize(env, 0);
    if (rc == MDB_SUCCESS) rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn_);
  }
  if (rc != MDB_SUCCESS) database_->fail("cannot begin a read transaction", rc);
  rc = mdb_cursor_open(txn_, database_->dbi(), &cursor_);
  if (rc != MDB_SUCCESS) {
    mdb_txn_abort(txn_);
    database_->fail("cannot open a cursor", rc);
  }
  seek_to_first();
}

LmdbCursor::~LmdbCursor() {
  mdb_cursor_close(cursor_);
  mdb_txn_abort(txn_);
}

void LmdbCursor::move(int operation) {
  MDB_val key;
  MDB_val value;
  // LMDB follows the page numbers it finds in the file; in a damaged file
  // they may point anywhere (see lmdb_fault_guard.hpp).
  const LmdbFaultGuard guard(database_->path().c_str());
  const int rc = mdb_cursor_get(cursor_, &key, &value, static_cast<MDB_cursor_op>(operation));
  if (rc == MDB_NOTFOUND) {
    valid_ = false;
    return;
  }
  if (rc != MDB_SUCCESS) database_->fail("cannot read the next record", rc);
  // A record larger than the whole map, or a key larger than LMDB allows,
  // comes from damaged bytes: say so before anyone allocates its size.
  const std::size_t map_bytes = database_->map_size();
  if (key.mv_size > kLargestKey || value.mv_size > map_bytes) {
    database_->fail(detail::concat("a record claims a ", key.mv_size, "-byte key and a ",
                                   value.mv_size, "-byte value in a ", map_bytes, "-byte database"),
                    MDB_CORRUPTED);
  }
  // Read every page of the record now, under the guard, so that a damaged
  // pointer faults here rather than in whoever decodes it.
  touch_pages(key.mv_data, key.mv_size);
  touch_pages(value.mv_data, value.mv_size);
  valid_ = true;
  key_ = std::string_view(static_cast<const char*>(key.mv_data), key.mv_size);
  value_ = std::string_view(static_cast<const char*>(value.mv_data), value.mv_size);
}

void LmdbCursor::seek_to_first() { move(MDB_FIRST); }

void LmdbCursor::next() {
  XTRAIN_ASSERT(valid_, "LmdbCursor::next() past the last record");
  move(MDB_NEXT);
}

std::string_view LmdbCursor::key() const {
  XTRAIN_ASSERT(valid_, "LmdbCursor::key() on an invalid cursor");
  return key_;
}

std::string_view LmdbCursor::value() const {
  XTRAIN_ASSERT(valid_, "LmdbCursor::value() on an invalid cursor");
  return value_;
}

// ---------------------------------------------------------------------------

LmdbWriter::LmdbWriter(std::shared_ptr<LmdbDatabase> database, std::size_t records_per_transaction)
    : database_(std::move(database)), records_per_transaction_(records_per_transaction) {
  XTRAIN_ASSERT(!database_->read_only(), "LmdbWriter on a database opened for reading");
  XTRAIN_ASSERT(records_per_transaction_ > 0);
  pending_.reserve(records_per_transaction_);
}

LmdbWriter::~LmdbWriter() {
  if (!pending_.empty()) {
    XLOG(WARNING) << "LMDB '" << database_->path() << "': " << pending_.size()
                  << " records were never committed and are discarded";
  }
}

void LmdbWriter::put(std::string key, std::string value) {
  pending_.emplace_back(std::move(key), std::move(value));
  if (pending_.size() >= records_per_transaction_) commit();
}

void LmdbWriter::commit() {
  if (pending_.empty()) return;
  while (!try_commit()) {
    database_->grow_map();
    XLOG(INFO) << "LMDB '" << database_->path() << "': map full, grew it to "
               << (database_->map_size() >> 20) << " MiB";
  }
  num_committed_ += pending_.size();
  pending_.clear();
}

bool LmdbWriter::try_commit() {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(database_->env(), nullptr, 0, &txn);
  if (rc != MDB_SUCCESS) database_->fail("cannot begin a write transaction", rc);
  for (auto& [key, value] : pending_) {
    MDB_val mdb_key{key.size(), key.data()};
    MDB_val mdb_value{value.size(), value.data()};
    rc = mdb_put(txn, database_->dbi(), &mdb_key, &mdb_value, 0);
    if (rc == MDB_SUCCESS) continue;
    mdb_txn_abort(txn);
    if (rc == MDB_MAP_FULL) return false;
    database_->fail("cannot write record '" + key + "'", rc);
  }
  // The commit frees the transaction whether it succeeds or not.
  rc = mdb_txn_commit(txn);
  if (rc == MDB_MAP_FULL) return false;
  if (rc != MDB_SUCCESS) database_->fail("cannot commit a transaction", rc);
  return true;
}

}  // namespace xtrain
