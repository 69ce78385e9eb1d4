// Blob: an N-d array of float with a gradient ("diff") of the same shape.
//
// Memory grows but never shrinks on reshape, so a net whose shapes settle
// does no allocation in the steady state.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xtrain/export.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {

class BlobProto;
class BlobShape;

class XTRAIN_API Blob {
 public:
  Blob() = default;
  explicit Blob(const std::vector<int>& shape);

  void reshape(const std::vector<int>& shape);
  void reshape(const BlobShape& shape);
  void reshape_like(const Blob& other);

  const std::vector<int>& shape() const { return shape_; }
  // Negative axes count from the end, as in Python.
  int shape(int axis) const { return shape_[canonical_axis_index(axis)]; }
  int num_axes() const { return static_cast<int>(shape_.size()); }
  std::size_t count() const { return count_; }
  // Product of the dimensions in [start_axis, end_axis).
  std::size_t count(int start_axis, int end_axis) const;
  std::size_t count(int start_axis) const { return count(start_axis, num_axes()); }
  int canonical_axis_index(int axis) const;
  // "64 1 28 28 (50176)"
  std::string shape_string() const;

  // Legacy 4-d accessors (missing trailing axes read as 1).
  int num() const { return legacy_shape(0); }
  int channels() const { return legacy_shape(1); }
  int height() const { return legacy_shape(2); }
  int width() const { return legacy_shape(3); }
  std::size_t offset(int n, int c = 0, int h = 0, int w = 0) const;

  const float* cpu_data() const;
  float* mutable_cpu_data();
  const float* cpu_diff() const;
  float* mutable_cpu_diff();
  const float* gpu_data() const;
  float* mutable_gpu_data();
  const float* gpu_diff() const;
  float* mutable_gpu_diff();

  // Layers that compute in the channel-blocked layout (see MemoryLayout in
  // xtrain/synced_memory.hpp) read and write through these; everything else
  // uses the plain accessors above, which convert back when needed.
  // Only 4-axis blobs with whole blocks of channels (8 or 16, see
  // src/core/channel_blocked_layout.hpp) can be blocked.
  bool can_be_channel_blocked() const;
  MemoryLayout data_layout() const { return data_->host_layout(); }
  MemoryLayout diff_layout() const { return diff_->host_layout(); }
  // Host pointers in `layout`, converted in place if the storage holds the
  // other layout.
  const float* cpu_data_in(MemoryLayout layout) const;
  float* mutable_cpu_data_in(MemoryLayout layout);
  const float* cpu_diff_in(MemoryLayout layout) const;
  float* mutable_cpu_diff_in(MemoryLayout layout);
  // For a layer that overwrites every value: no conversion, the storage is
  // just marked as holding `layout` from now on.
  float* overwrite_cpu_data_in(MemoryLayout layout);
  float* overwrite_cpu_diff_in(MemoryLayout layout);

  // Make this blob's data/diff point at other's (shapes must match in count).
  void share_data(const Blob& other);
  void share_diff(const Blob& other);

  // The storage behind data and diff; several blobs may hold the same one
  // (in-place layers, Split, shared parameters, a Net's memory plan).
  const std::shared_ptr<SyncedMemory>& data_memory() const { return data_; }
  const std::shared_ptr<SyncedMemory>& diff_memory() const { return diff_; }
  // Keep data/diff in `memory` from now on; it must hold the blob's capacity.
  // A later reshape beyond the capacity gives the blob fresh storage again.
  void use_data_memory(std::shared_ptr<SyncedMemory> memory);
  void use_diff_memory(std::shared_ptr<SyncedMemory> memory);

  // data -= diff, the plain gradient step the solvers build on.
  void update();
  double asum_data() const;
  double asum_diff() const;
  double sumsq_data() const;
  double sumsq_diff() const;
  void scale_data(float factor);
  void scale_diff(float factor);

  // Reads shape and values; with reshape=false the shapes must already agree.
  void from_proto(const BlobProto& proto, bool reshape = true);
  void to_proto(BlobProto* proto, bool write_diff = false) const;
  bool shape_equals(const BlobProto& proto) const;

 private:
  int legacy_shape(int index) const;
  BlockedGeometry blocked_geometry() const;
  enum class HostAccess { kRead, kModify, kOverwrite };
  float* host_in(SyncedMemory& memory, MemoryLayout layout, HostAccess access) const;

  std::shared_ptr<SyncedMemory> data_;
  std::shared_ptr<SyncedMemory> diff_;
  std::vector<int> shape_;
  std::size_t count_ = 0;
  std::size_t capacity_ = 0;
};

// The shape of a BlobProto, from its `shape` or its legacy 4-d fields.
XTRAIN_API std::vector<int> blob_proto_shape(const BlobProto& proto);
XTRAIN_API std::string shape_to_string(const std::vector<int>& shape);

}  // namespace xtrain
