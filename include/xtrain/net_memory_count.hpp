// What a net holds in host memory, by kind, so that a user sees where the
// memory of training goes (`xtrain time` logs it after the first iteration).
//
// Storage is counted once however many blobs share it (in-place tops, Split
// tops, the memory plan's shared diffs, shared parameters), and only once it
// is allocated: a diff that nothing has touched yet takes no memory.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

class Net;

struct XTRAIN_API NetMemoryCount {
  std::size_t parameters = 0;            // data of the layers' blobs (BatchNorm's statistics too)
  std::size_t parameter_gradients = 0;   // their diffs
  std::size_t activations = 0;           // data of the net's blobs
  std::size_t activation_gradients = 0;  // diffs of the net's blobs
  // Host buffers the built-in layers hold besides their blobs (copies kept
  // for backward, masks, scratch), summed by layer type ("BatchNorm", ...).
  std::map<std::string, std::size_t> layer_buffers;

  std::size_t layer_buffer_total() const;
  std::size_t total() const;
};

XTRAIN_API NetMemoryCount count_net_memory(const Net& net);

// Host bytes of all threads' copies of product operands rounded to a 16-bit
// type for kernels that multiply in fp32 (bf16 without bf16 instructions or
// where the timed search took an fp32 kernel, fp16 on every CPU): scratch
// that all layers share, so not in any net's count.
XTRAIN_API std::size_t rounded_operand_scratch_bytes();

}  // namespace xtrain
