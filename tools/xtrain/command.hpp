// The subcommands of `xtrain` and what they share.
#pragma once

#include <string>
#include <vector>

#include "xtrain/device.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::cli {

// Exit code of a training that stopped early (a signal, the time budget)
// after writing a snapshot: "resubmit me with --snapshot=auto". 75 is
// EX_TEMPFAIL of sysexits.h, "try again later".
constexpr int kExitResubmit = 75;

int train_command();
int test_command();
int time_command();
// time --training_step: whole solver iterations instead of per-layer times.
int time_training_steps();
int device_query_command();
int upgrade_command();

// "a,b,c" -> {"a", "b", "c"}; "" -> {}.
std::vector<std::string> split_commas(const std::string& text);

// The ids of --gpu ("0", "0,1", "all") among `available` visible GPUs.
std::vector<int> parse_gpu_ids(const std::string& gpu_flag, int available);
// The device from --gpu (and the solver's mode, if any), selected for this
// thread. Throws xtrain::Error with one clear line when a GPU is asked for
// and none can be used (none visible, a wrong id, busy in exclusive mode).
Device choose_device(const std::string& gpu_flag, bool solver_wants_gpu, int solver_device_id);

// Sizes the CPU thread pool from --threads, logs what runs the kernels, and
// applies the cuDNN flags (--cudnn_workspace_mb, --cudnn_algorithm_search).
void configure_compute();

// TRAIN or TEST from a flag value; `fallback` when empty.
Phase parse_phase(const std::string& text, Phase fallback);

}  // namespace xtrain::cli
