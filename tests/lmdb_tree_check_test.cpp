// The LMDB tree check (src/data/lmdb_tree_check.hpp): on healthy databases
// of every shape it finds exactly what LMDB itself counts; each kind of
// structural damage that would send LMDB outside the file, into a null
// pointer or into an assertion is refused at open, naming the page.
#include "data/lmdb_tree_check.hpp"

#include <gtest/gtest.h>
#include <lmdb.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/lmdb_database.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

constexpr std::size_t kPage = 4096;

// `count` records of `value_size` bytes, written with LMDB's own API.
void write_lmdb(const std::string& path, int count, std::size_t value_size) {
  std::filesystem::create_directories(path);
  MDB_env* env = nullptr;
  ASSERT_EQ(mdb_env_create(&env), MDB_SUCCESS);
  ASSERT_EQ(mdb_env_set_mapsize(env, std::size_t{1} << 28), MDB_SUCCESS);
  ASSERT_EQ(mdb_env_open(env, path.c_str(), 0, 0664), MDB_SUCCESS);
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), MDB_SUCCESS);
  ASSERT_EQ(mdb_dbi_open(txn, nullptr, 0, &dbi), MDB_SUCCESS);
  std::string value(value_size, 'v');
  for (int i = 0; i < count; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "%08d", i);
    value[0] = static_cast<char>(i);
    MDB_val k{std::strlen(key), key};
    MDB_val v{value.size(), value.data()};
    ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), MDB_SUCCESS);
  }
  ASSERT_EQ(mdb_txn_commit(txn), MDB_SUCCESS);
  mdb_env_close(env);
}

// What LMDB says of the database, and where its snapshot lies.
struct LmdbOwnView {
  MDB_stat stat{};
  LmdbSnapshotPlace place;
};

LmdbOwnView lmdb_own_view(const std::string& path) {
  LmdbOwnView view;
  MDB_env* env = nullptr;
  mdb_env_create(&env);
  EXPECT_EQ(mdb_env_open(env, path.c_str(), MDB_RDONLY, 0664), MDB_SUCCESS);
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  EXPECT_EQ(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), MDB_SUCCESS);
  EXPECT_EQ(mdb_dbi_open(txn, nullptr, 0, &dbi), MDB_SUCCESS);
  mdb_stat(txn, dbi, &view.stat);
  MDB_envinfo info;
  mdb_env_info(env, &info);
  view.place.page_size = view.stat.ms_psize;
  view.place.map_size = info.me_mapsize;
  view.place.txn_id = mdb_txn_id(txn);
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return view;
}

TEST(LmdbTreeCheck, CountsWhatLmdbCountsOnEveryShapeOfTree) {
  TempDir dir("lmdb_tree");
  struct Shape {
    int records;
    std::size_t value_size;
  };
  // One leaf; inline values over two and three levels; overflow values
  // (one and several pages each) under branches.
  for (const Shape& shape : {Shape{5, 100}, Shape{3000, 200}, Shape{40000, 60}, Shape{300, 5000},
                             Shape{120, 20000}, Shape{1, 100000}}) {
    SCOPED_TRACE(std::to_string(shape.records) + " records of " +
                 std::to_string(shape.value_size) + " bytes");
    const std::string path = dir.file("db_" + std::to_string(shape.records));
    write_lmdb(path, shape.records, shape.value_size);
    const LmdbOwnView own = lmdb_own_view(path);
    const LmdbTreeCounts found = check_lmdb_tree(path, own.place);
    EXPECT_EQ(found.entries, own.stat.ms_entries);
    EXPECT_EQ(found.branch_pages, own.stat.ms_branch_pages);
    EXPECT_EQ(found.leaf_pages, own.stat.ms_leaf_pages);
    EXPECT_EQ(found.overflow_pages, own.stat.ms_overflow_pages);
    EXPECT_EQ(found.depth, own.stat.ms_depth);
    EXPECT_EQ(found.entries, static_cast<std::uint64_t>(shape.records));
  }
}

TEST(LmdbTreeCheck, AnEmptyDatabaseHasNoTree) {
  TempDir dir("lmdb_tree");
  const std::string path = dir.file("empty");
  write_lmdb(path, 0, 0);
  const LmdbTreeCounts found = check_lmdb_tree(path, lmdb_own_view(path).place);
  EXPECT_EQ(found.entries, 0u);
  EXPECT_EQ(found.leaf_pages, 0u);
  EXPECT_EQ(LmdbDatabase::open_for_reading(path)->num_records(), 0u);
}

// ---------------------------------------------------------------------------
// Damage, planted where LMDB would trip over it.

// The bytes of data.mdb, editable, and the tree's landmarks found by
// following the format (independently of the code under test).
class DataFile {
 public:
  explicit DataFile(std::string database) : path_(std::move(database) + "/data.mdb") {
    std::ifstream in(path_, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), {});
  }
  void save() const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
  }
  // The meta page of the newer snapshot, and the main tree's root.
  std::size_t meta() const { return u64(kPage + 16 + 128) > u64(16 + 128) ? kPage : 0; }
  std::size_t root() const { return u64(meta() + 16 + 72 + 40); }
  std::size_t page_at(std::size_t page) const { return page * kPage; }
  // Byte offset of node `k` of page `page`.
  std::size_t node(std::size_t page, std::size_t k) const {
    return page_at(page) + u16(page_at(page) + 16 + 2 * k);
  }
  std::size_t num_nodes(std::size_t page) const { return (u16(page_at(page) + 12) - 16) / 2; }
  // The child page of branch node `k`.
  std::size_t child(std::size_t page, std::size_t k) const {
    const std::size_t at = node(page, k);
    return u32(at) | (std::size_t{u16(at + 4)} << 32);
  }

  std::uint64_t u64(std::size_t at) const { return read<std::uint64_t>(at); }
  std::uint32_t u32(std::size_t at) const { return read<std::uint32_t>(at); }
  std::uint16_t u16(std::size_t at) const { return read<std::uint16_t>(at); }
  template <typename T>
  void write(std::size_t at, T value) {
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  void truncate(std::size_t size) { bytes_.resize(size); }
  std::size_t size() const { return bytes_.size(); }

 private:
  template <typename T>
  T read(std::size_t at) const {
    T value;
    std::memcpy(&value, bytes_.data() + at, sizeof(T));
    return value;
  }
  std::string path_;
  std::vector<char> bytes_;
};

std::string open_error(const std::string& path) {
  try {
    auto database = LmdbDatabase::open_for_reading(path);
    LmdbCursor cursor(database);
    while (cursor.valid()) cursor.next();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

struct Damage {
  const char* name;
  int records;
  std::size_t value_size;
  void (*plant)(DataFile&);
  const char* message;
};

const Damage kDamages[] = {
    {"a branch's child page past the last page", 3000, 200,
     [](DataFile& f) { f.write<std::uint32_t>(f.node(f.root(), 1), 0x7fffff); },
     "outside pages 2.."},
    {"a child page number pointing at a meta page", 3000, 200,
     [](DataFile& f) { f.write<std::uint32_t>(f.node(f.root(), 1), 1); }, "outside pages 2.."},
    {"a child reached twice", 3000, 200,
     [](DataFile& f) { f.write<std::uint32_t>(f.node(f.root(), 1), f.child(f.root(), 0)); },
     "is reached twice"},
    {"a leaf's flags", 3000, 200,
     [](DataFile& f) { f.write<std::uint16_t>(f.page_at(f.child(f.root(), 0)) + 10, 0x01); },
     "not those of a leaf page"},
    {"a branch with one node (LMDB asserts)", 3000, 200,
     [](DataFile& f) { f.write<std::uint16_t>(f.page_at(f.root()) + 12, 16 + 2); }, "1 node(s)"},
    {"a leaf with no node", 5, 100, [](DataFile& f) { f.write<std::uint16_t>(f.page_at(f.root()) + 12, 16); },
     "0 node(s)"},
    {"a node offset past the page", 5, 100,
     [](DataFile& f) { f.write<std::uint16_t>(f.page_at(f.root()) + 16 + 2, 4094); },
     "node 1 starts at byte 4094"},
    {"an inline value's size", 5, 100,
     [](DataFile& f) { f.write<std::uint32_t>(f.node(f.root(), 2), 70000); },
     "record 2's 70000-byte value runs past the end of the page"},
    {"a key's size", 5, 100, [](DataFile& f) { f.write<std::uint16_t>(f.node(f.root(), 0) + 6, 600); },
     "600-byte key"},
    {"a duplicates flag (LMDB follows a null sub-cursor)", 5, 100,
     [](DataFile& f) { f.write<std::uint16_t>(f.node(f.root(), 3) + 4, 0x04); },
     "node flags 0x4"},
    {"an overflow value's first page", 300, 5000,
     [](DataFile& f) {
       const std::size_t leaf = f.child(f.root(), 0);
       const std::size_t at = f.node(leaf, 0);
       f.write<std::uint64_t>(at + 8 + f.u16(at + 6), 1u << 30);
     },
     "past the end of the database"},
    {"an overflow value's size", 300, 5000,
     [](DataFile& f) {
       const std::size_t leaf = f.child(f.root(), 0);
       f.write<std::uint32_t>(f.node(leaf, 0), 0x7fffffff);
     },
     "-byte value is said to start at page"},
    {"the file cut short", 300, 5000, [](DataFile& f) { f.truncate(f.size() - 3 * kPage); },
     "past the end of the file"},
    {"the record count", 3000, 200,
     [](DataFile& f) { f.write<std::uint64_t>(f.meta() + 16 + 72 + 32, 3001); },
     "the meta page claims 3001 records"},
    {"the tree's depth", 3000, 200,
     [](DataFile& f) { f.write<std::uint16_t>(f.meta() + 16 + 72 + 6, 40); },
     "a tree 40 levels deep"},
    // LMDB divides by the page size: a 0 was a SIGFPE in mdb_env_open
    // (found by fuzz/lmdb_fuzzer).
    {"meta page 0's page size", 5, 100, [](DataFile& f) { f.write<std::uint32_t>(16 + 24, 0); },
     "meta page 0 gives a page size of 0 bytes"},
    {"meta pages of two page sizes", 5, 100,
     [](DataFile& f) { f.write<std::uint32_t>(kPage + 16 + 24, 8192); },
     "meta page 1 gives a page size of 8192 bytes"},
    {"a memory map smaller than the meta pages", 5, 100,
     [](DataFile& f) {
       f.write<std::uint64_t>(f.meta() + 16 + 16, 0);   // map size
       f.write<std::uint64_t>(f.meta() + 16 + 120, 0);  // last page
     },
     "too small for the two meta pages"},
    {"a duplicate-keys database", 5, 100,
     [](DataFile& f) { f.write<std::uint16_t>(f.meta() + 16 + 72 + 4, 0x04); },
     "duplicate keys"},
};

TEST(LmdbTreeCheck, StructuralDamageIsRefusedAtOpenNamingThePage) {
  TempDir dir("lmdb_tree");
  int index = 0;
  for (const Damage& damage : kDamages) {
    SCOPED_TRACE(damage.name);
    const std::string path = dir.file("db_" + std::to_string(index++));
    write_lmdb(path, damage.records, damage.value_size);
    ASSERT_EQ(open_error(path), "") << "healthy before the damage";
    DataFile file(path);
    damage.plant(file);
    file.save();
    const std::string error = open_error(path);
    EXPECT_NE(error.find("LMDB '" + path + "' is damaged: "), std::string::npos) << error;
    EXPECT_NE(error.find(damage.message), std::string::npos) << error;
    EXPECT_NE(error.find("rebuild the database"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace xtrain
