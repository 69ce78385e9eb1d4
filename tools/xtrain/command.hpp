// The subcommands of `xtrain` and what they share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "xtrain/comm.hpp"
#include "xtrain/device.hpp"
#include "xtrain/net.hpp"
#include "xtrain/precision.hpp"
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
// export / import: ONNX models (docs/tools/export.md, import.md).
int export_command();
int import_command();
// draw NET.prototxt OUT.svg; extract_features, also in Caffe's positional
// form WEIGHTS NET BLOBS DBS NUM_BATCHES lmdb [CPU|GPU] [ID]. `arguments`
// are the words after the command's name.
int draw_command(const std::vector<std::string>& arguments);
int extract_features_command(const std::vector<std::string>& arguments);
// classify and detect take image files as arguments after the flags.
int classify_command(const std::vector<std::string>& images);
int detect_command(const std::vector<std::string>& images);
// plot LOG_OR_METRICS: the training report from a log or a metrics file.
int plot_command(const std::vector<std::string>& arguments);

// "a,b,c" -> {"a", "b", "c"}; "" -> {}.
std::vector<std::string> split_commas(const std::string& text);

// --mean_values' text ("104,117,123") as numbers; an error names the part
// that is not one.
std::vector<float> parse_mean_values(const std::string& text);

// The ids of --gpu ("0", "0,1", "all") among `available` visible GPUs.
std::vector<int> parse_gpu_ids(const std::string& gpu_flag, int available);
// The GPU of the rank with `local_rank` in a job of several ranks, decided
// without CUDA: among the GPUs CUDA_VISIBLE_DEVICES lists (local rank modulo
// their count: a launcher that binds each rank to its own GPU leaves it one),
// or GPU `local_rank` when the variable is unset.
int gpu_of_local_rank(int local_rank);
// The devices from --gpu (and the solver's mode, if any): the CPU, or the
// GPUs named, each checked and the first selected for this thread. In a job
// of several ranks (`job` given, size > 1) the rank takes one GPU, that of
// its local rank, and no other GPU is touched: the choice is made before
// any CUDA call that could create a context. Throws xtrain::Error with one
// clear line when a GPU is asked for and cannot be used (none visible, a
// wrong or repeated id, busy in exclusive mode).
std::vector<Device> choose_devices(const std::string& gpu_flag, bool solver_wants_gpu,
                                   int solver_device_id, const ProcessGroup* job);
// The same for commands that run on one device (several ids: an error).
Device choose_device(const std::string& gpu_flag, bool solver_wants_gpu, int solver_device_id);

// Sizes the CPU thread pool from --threads, logs what runs the kernels, and
// applies the GPU flags (--cudnn_workspace_mb, --cudnn_algorithm_search,
// --gpu_math).
void configure_compute();

// What --precision asks for: nothing when unset (the net's fields decide),
// else the one type the whole run computes in. Throws xtrain::Error for a
// name that is not a precision.
std::optional<NumberType> precision_flag();

// Logs what the net holds by kind (parameters, gradients, activations, layer
// buffers, ...), the solver's history and the rest of the peak resident
// memory (tools/xtrain/memory_breakdown.cpp).
void log_memory_breakdown(const Net& net, std::size_t solver_history_bytes);

// TRAIN or TEST from a flag value; `fallback` when empty.
Phase parse_phase(const std::string& text, Phase fallback);

// Copies `weights` (comma-separated files, as --weights gives them) into `net`. A command that
// scores or deploys (`scoring`) refuses weights that leave learnable layers at their random initial
// values unless --allow_missing_weights; training (fine- tuning, where new layers are expected)
// names them in a warning.
void copy_weights(Net& net, const std::string& weights, bool scoring);

}  // namespace xtrain::cli
