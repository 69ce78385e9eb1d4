// What the calling thread has under way on a device, for the caching
// allocator when the device is full (src/core/caching_allocator.hpp).
//
// Releasing the allocator's cache calls cudaFree, which waits for all the
// work on the device. From the second iteration of data-parallel training
// on, that work includes gradient sums that NCCL is running on the exchange
// stream while backward goes on; a sum spins until every replica has joined
// it, so a replica that frees memory waits, inside cudaFree, for the others
// (and with no timeout: a replica stopped elsewhere would hang it). So the
// code that starts such work registers a drain for it: before the cache is
// released, the thread's drains wait for their work (within the
// communicator's timeout, with its errors), and cudaFree then finds nothing
// of ours spinning on the device.
//
// The layer running on the thread is kept too, so that an out-of-memory
// error names it (set by Layer::forward and Layer::backward).
//
// Everything here is per thread: a replica's thread drains its own sums; a
// data-loading thread that frees memory does not touch the solver's.
#pragma once

#include <functional>
#include <string>

namespace xtrain {

// Registers `drain` for this thread while the object lives. `drain` waits
// until the work it stands for has finished (it may throw xtrain::Error);
// it must be safe to call more than once.
class PendingWorkDrain {
 public:
  explicit PendingWorkDrain(std::function<void()> drain);
  ~PendingWorkDrain();
  PendingWorkDrain(const PendingWorkDrain&) = delete;
  PendingWorkDrain& operator=(const PendingWorkDrain&) = delete;

 private:
  std::function<void()> drain_;
};

// Runs the drains this thread registered, the latest first; returns how
// many ran.
int drain_pending_work();

// "layer 'conv1' (Convolution), backward" while a layer of this thread runs
// a pass; empty otherwise.
std::string running_layer();

// Marks the layer `name` of type `type` running `pass` ("forward",
// "backward") on this thread for the object's life, restoring the previous
// one after it (a layer may run others: SPP, RNN, LSTM). Keeps pointers: the
// strings must outlive the object.
class RunningLayer {
 public:
  RunningLayer(const std::string& name, const char* type, const char* pass);
  ~RunningLayer();
  RunningLayer(const RunningLayer&) = delete;
  RunningLayer& operator=(const RunningLayer&) = delete;

 private:
  const std::string* previous_name_;
  const char* previous_type_;
  const char* previous_pass_;
};

}  // namespace xtrain
