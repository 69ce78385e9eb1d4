// LMDB wrapper: round trips, transaction batching, map growth, read-only
// opening and the errors a user sees.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/lmdb_database.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

std::string key_of(int i) {
  char key[16];
  std::snprintf(key, sizeof key, "%08d", i);
  return key;
}

std::string value_of(int i, std::size_t size) {
  std::string value(size, '\0');
  for (std::size_t j = 0; j < size; ++j) value[j] = static_cast<char>((i * 31 + j * 7) & 0xff);
  return value;
}

void write_records(const std::string& path, int count, std::size_t value_size,
                   std::size_t initial_map_size = LmdbDatabase::kDefaultInitialMapSize) {
  LmdbWriter writer(LmdbDatabase::open_for_writing(path, initial_map_size));
  for (int i = 0; i < count; ++i) writer.put(key_of(i), value_of(i, value_size));
  writer.commit();
  ASSERT_EQ(writer.num_committed(), static_cast<std::size_t>(count));
}

// Reads every record back, checking keys are in order and values intact.
void expect_records(const std::string& path, int count, std::size_t value_size) {
  auto database = LmdbDatabase::open_for_reading(path);
  EXPECT_EQ(database->num_records(), static_cast<std::size_t>(count));
  LmdbCursor cursor(database);
  int seen = 0;
  for (; cursor.valid(); cursor.next(), ++seen) {
    ASSERT_LT(seen, count);
    ASSERT_EQ(cursor.key(), key_of(seen));
    ASSERT_EQ(cursor.value(), value_of(seen, value_size)) << "record " << seen;
  }
  EXPECT_EQ(seen, count);
}

using testing::error_of;

TEST(Lmdb, WriteReadRoundTripAcrossTransactions) {
  TempDir dir("lmdb");
  const std::string path = dir.file("nested/db");  // parents are created too
  write_records(path, 2500, 100);
  EXPECT_TRUE(std::filesystem::exists(path + "/data.mdb"));
  EXPECT_TRUE(std::filesystem::exists(path + "/lock.mdb"));
  expect_records(path, 2500, 100);
}

TEST(Lmdb, CursorSeeksBackToFirst) {
  TempDir dir("lmdb");
  write_records(dir.file("db"), 3, 10);
  LmdbCursor cursor(LmdbDatabase::open_for_reading(dir.file("db")));
  cursor.next();
  cursor.next();
  EXPECT_EQ(cursor.key(), key_of(2));
  cursor.next();
  EXPECT_FALSE(cursor.valid());
  cursor.seek_to_first();
  ASSERT_TRUE(cursor.valid());
  EXPECT_EQ(cursor.key(), key_of(0));
}

TEST(Lmdb, WriterCommitsEveryBatchAndDiscardsTheUncommittedRest) {
  TempDir dir("lmdb");
  {
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("db")), 1000);
    for (int i = 0; i < 1500; ++i) writer.put(key_of(i), value_of(i, 8));
    EXPECT_EQ(writer.num_committed(), 1000u);
  }  // 500 pending records are dropped, not half-written
  expect_records(dir.file("db"), 1000, 8);
}

TEST(Lmdb, MapGrowsWhenFull) {
  TempDir dir("lmdb");
  const std::size_t initial = 256 << 10;  // 256 KiB
  const int count = 300;
  const std::size_t value_size = 10000;  // ~3 MB in all: several doublings
  {
    auto database = LmdbDatabase::open_for_writing(dir.file("db"), initial);
    EXPECT_EQ(database->map_size(), initial);
    LmdbWriter writer(database, 100);
    for (int i = 0; i < count; ++i) writer.put(key_of(i), value_of(i, value_size));
    writer.commit();
    EXPECT_GE(database->map_size(), 4 * initial);
  }
  expect_records(dir.file("db"), count, value_size);
  // The data file holds the data, not a sparse file of the map's size.
  const auto file_size = std::filesystem::file_size(dir.file("db/data.mdb"));
  EXPECT_LT(file_size, 2 * count * value_size);
}

TEST(Lmdb, ReopenForWritingAppends) {
  TempDir dir("lmdb");
  write_records(dir.file("db"), 10, 16);
  {
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("db")));
    writer.put(key_of(10), value_of(10, 16));
    writer.commit();
  }
  expect_records(dir.file("db"), 11, 16);
}

TEST(Lmdb, EmptyDatabaseHasNoRecords) {
  TempDir dir("lmdb");
  LmdbDatabase::open_for_writing(dir.file("db"));
  auto database = LmdbDatabase::open_for_reading(dir.file("db"));
  EXPECT_EQ(database->num_records(), 0u);
  LmdbCursor cursor(database);
  EXPECT_FALSE(cursor.valid());
}

TEST(Lmdb, ReadersOfOneDirectoryShareTheEnvironment) {
  TempDir dir("lmdb");
  write_records(dir.file("db"), 2, 4);
  auto first = LmdbDatabase::open_for_reading(dir.file("db"));
  auto second = LmdbDatabase::open_for_reading(dir.file("db") + "/");
  EXPECT_EQ(first.get(), second.get());
  // Two cursors (two read transactions) on one thread work (MDB_NOTLS).
  LmdbCursor a(first);
  LmdbCursor b(second);
  b.next();
  EXPECT_EQ(a.key(), key_of(0));
  EXPECT_EQ(b.key(), key_of(1));
}

TEST(Lmdb, MissingDatabaseErrorNamesPathAndFix) {
  TempDir dir("lmdb");
  const std::string message =
      error_of([&] { LmdbDatabase::open_for_reading(dir.file("no_such_lmdb")); });
  EXPECT_NE(message.find("cannot open LMDB '" + dir.file("no_such_lmdb") + "'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  EXPECT_NE(message.find("convert_mnist_data"), std::string::npos) << message;
}

TEST(Lmdb, FileOrLevelDbInsteadOfLmdbIsExplained) {
  TempDir dir("lmdb");
  write_records(dir.file("db"), 1, 4);
  std::string message = error_of([&] { LmdbDatabase::open_for_reading(dir.file("db/data.mdb")); });
  EXPECT_NE(message.find("give the directory"), std::string::npos) << message;

  dir.write("leveldb/CURRENT", "MANIFEST-000001\n");
  message = error_of([&] { LmdbDatabase::open_for_reading(dir.file("leveldb")); });
  EXPECT_NE(message.find("LevelDB"), std::string::npos) << message;

  std::filesystem::create_directories(dir.file("empty_dir"));
  message = error_of([&] { LmdbDatabase::open_for_reading(dir.file("empty_dir")); });
  EXPECT_NE(message.find("no data.mdb"), std::string::npos) << message;
}

// A dataset in a directory the reader cannot write (no lock.mdb, and no right
// to create one) is still readable. Root may write anywhere, so the reading
// happens in a child process running as "nobody".
TEST(Lmdb, ReadOnlyDirectoryWithoutLockFileIsReadable) {
  TempDir dir("lmdb");
  write_records(dir.file("db"), 5, 32);
  std::filesystem::remove(dir.file("db/lock.mdb"));
  ::chmod(dir.path().c_str(), 0755);
  ::chmod(dir.file("db").c_str(), 0555);
  ::chmod(dir.file("db/data.mdb").c_str(), 0444);

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    int status = 1;
    try {
      auto database = LmdbDatabase::open_for_reading(dir.file("db"));
      LmdbCursor cursor(database);
      status = database->num_records() == 5 && cursor.valid() && cursor.key() == key_of(0) &&
                       cursor.value() == value_of(0, 32)
                   ? 0
                   : 2;
    } catch (...) {
      status = 1;
    }
    ::_exit(status);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::chmod(dir.file("db").c_str(), 0755);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: open failed, 2: wrong data, 3: setuid failed";
  EXPECT_FALSE(std::filesystem::exists(dir.file("db/lock.mdb")));
}

}  // namespace
}  // namespace xtrain
