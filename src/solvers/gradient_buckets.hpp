// Data-parallel gradient averaging overlapped with backward, as PyTorch DDP
// does it: the learnable parameters are grouped, in the order backward
// finishes their gradients, into buckets of about `bucket_bytes`; as soon as
// the last layer contributing to a bucket has run backward, the bucket's
// gradients are copied into one buffer and its sum over the replicas starts
// (Communicator::start_allreduce_sum), while backward goes on below it.
// After backward, finish() waits for every sum and writes the averages back
// into the parameters' diffs.
//
// Every replica plans the same buckets from the same net and starts their
// sums in the same order, as collectives need. The buffer lives where the
// communicator works (GPU memory for NCCL, else host memory), and also
// carries the loss, so that the displayed loss is the replicas' mean.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/thread_device_work.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/communicator.hpp"
#include "xtrain/device.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

// DDP's defaults: 25 MiB buckets, the first (the last layers' gradients) of
// 1 MiB so that the first sum starts early.
constexpr std::size_t kDefaultGradientBucketBytes = 25u << 20;
constexpr std::size_t kFirstGradientBucketBytes = 1u << 20;

// The shape of a buffer of `values` floats: a Blob's dimensions are ints,
// and a net may hold more than 2^31 - 1 parameter values in all, so past
// that it is rows of 65,536, rounded up (the count is at least `values`,
// the surplus under 65,536, and no dimension wraps).
std::vector<int> gradient_buffer_shape(std::size_t values);

class GradientBuckets {
 public:
  // Plans the buckets of `net`'s learnable parameters. The net must outlive
  // this object and keep its parameters.
  GradientBuckets(const Net& net, std::size_t bucket_bytes = kDefaultGradientBucketBytes);

  // One iteration, around the last backward pass (after its forward):
  //   begin(exchange, where, loss); net.backward(layer_done); finish()
  // `where` is the device whose memory `exchange` sums (the CPU for host
  // communicators). finish() returns the replicas' mean loss.
  void begin(Communicator& exchange, const Device& where, float loss);
  void layer_done(int layer);
  float finish();
  // Waits for every sum started so far (they stay pending for finish()).
  void wait_for_started_sums();

  std::size_t bucket_count() const { return buckets_.size(); }
  // The learnable parameter ids (indices into Net::learnable_params) of
  // bucket b, in the order they sit in the buffer.
  const std::vector<int>& bucket_params(std::size_t b) const { return buckets_[b].params; }

 private:
  struct Bucket {
    std::vector<int> params;
    std::size_t begin = 0;  // in the buffer
    std::size_t end = 0;
    int waiting_for = 0;  // parameters not final yet, this iteration
  };

  void plan(std::size_t bucket_bytes);
  void start_ready_buckets();

  const Net& net_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;                       // by learnable id
  std::vector<std::size_t> offset_of_;               // by learnable id: where in the buffer
  std::vector<std::vector<int>> final_after_layer_;  // learnable ids, by layer
  Blob buffer_;                                      // the loss, then every gradient

  // This iteration's exchange.
  Communicator* exchange_ = nullptr;
  Device where_;
  std::size_t next_to_start_ = 0;
  std::vector<std::unique_ptr<PendingCollective>> pending_;
  // From begin() to finish(): a device that runs out of memory waits for
  // the sums started so far before it releases its cache (cudaFree would
  // wait for them anyway, with no timeout: core/thread_device_work.hpp).
  std::unique_ptr<PendingWorkDrain> drain_;
};

}  // namespace xtrain
