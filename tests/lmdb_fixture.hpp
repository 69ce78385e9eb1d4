// Small LMDBs of Datum records for tests, written with the raw LMDB API so
// the fixtures do not depend on the code under test.
#pragma once

#include <lmdb.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::testing {

struct FixtureImage {
  int label = 0;
  std::vector<unsigned char> pixels;  // channels * height * width
};

inline void write_datum_lmdb(const std::string& path, int channels, int height, int width,
                             const std::vector<FixtureImage>& images) {
  std::filesystem::create_directories(path);
  MDB_env* env = nullptr;
  auto ok = [](int rc) {
    if (rc != MDB_SUCCESS) throw std::runtime_error(mdb_strerror(rc));
  };
  ok(mdb_env_create(&env));
  ok(mdb_env_set_mapsize(env, 1ull << 26));
  ok(mdb_env_open(env, path.c_str(), 0, 0664));
  MDB_txn* txn = nullptr;
  MDB_dbi dbi;
  ok(mdb_txn_begin(env, nullptr, 0, &txn));
  ok(mdb_dbi_open(txn, nullptr, 0, &dbi));
  for (std::size_t i = 0; i < images.size(); ++i) {
    Datum datum;
    datum.set_channels(channels);
    datum.set_height(height);
    datum.set_width(width);
    datum.set_label(images[i].label);
    datum.set_data(std::string(images[i].pixels.begin(), images[i].pixels.end()));
    std::string value = datum.SerializeAsString();
    char key[32];
    std::snprintf(key, sizeof(key), "%08d", static_cast<int>(i));
    MDB_val k{std::strlen(key), key};
    MDB_val v{value.size(), value.data()};
    ok(mdb_put(txn, dbi, &k, &v, 0));
  }
  ok(mdb_txn_commit(txn));
  mdb_env_close(env);
}

}  // namespace xtrain::testing
