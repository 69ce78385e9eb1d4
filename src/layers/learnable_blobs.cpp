#include "layers/learnable_blobs.hpp"

#include "xtrain/error.hpp"
#include "xtrain/filler.hpp"

namespace xtrain {
namespace {
// Blobs stored by old Caffe versions use 4-d shapes padded with leading 1s.
bool same_as_legacy_4d(std::vector<int> a, std::vector<int> b) {
  if (a.size() > 4 || b.size() > 4) return false;
  a.insert(a.begin(), 4 - a.size(), 1);
  b.insert(b.begin(), 4 - b.size(), 1);
  return a == b;
}

std::string names_of(const std::vector<LearnableBlobSpec>& specs) {
  std::string names;
  for (const auto& spec : specs) names += (names.empty() ? "" : " and ") + std::string(spec.name);
  return names;
}
}  // namespace

void setup_learnable_blobs(const std::string& where, const std::vector<LearnableBlobSpec>& specs,
                           const std::string& shape_meaning,
                           std::vector<std::shared_ptr<Blob>>* blobs, RandomStream& random) {
  if (!blobs->empty()) {
    XTRAIN_CHECK(blobs->size() == specs.size(), where, " has ", blobs->size(),
                 " stored blobs but needs ", specs.size(), " (", names_of(specs),
                 "); check bias_term");
    for (std::size_t i = 0; i < specs.size(); ++i) {
      Blob& blob = *(*blobs)[i];
      if (blob.shape() == specs[i].shape) continue;
      XTRAIN_CHECK(same_as_legacy_4d(blob.shape(), specs[i].shape), where, ": the stored ",
                   specs[i].name, " blob has shape ", shape_to_string(blob.shape()),
                   " but this layer needs ", shape_to_string(specs[i].shape), " ", shape_meaning);
      blob.reshape(specs[i].shape);
    }
    return;
  }
  for (const LearnableBlobSpec& spec : specs) {
    auto blob = std::make_shared<Blob>(spec.shape);
    try {
      make_filler(*spec.filler)->fill(*blob, random);
    } catch (const Error& error) {
      throw Error(where + ": " + spec.filler_field + ": " + error.what());
    }
    blobs->push_back(blob);
  }
}

}  // namespace xtrain
