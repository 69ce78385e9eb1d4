// Each description is the one line `xtrain <command> --help` shows for the
// flag (which commands read it: kCommandHelp in main.cpp); the details are in
// docs/tools/<command>.md.
#include "flags.hpp"

#include <cstdint>
#include <cstdlib>

#include "xtrain/cudnn_options.hpp"

namespace {

// The default of --cpu_algorithm_search: XTRAIN_CPU_ALGORITHM_SEARCH when set
// (a site or a test harness can fix it for every run), else timed.
const char* default_cpu_algorithm_search() {
  const char* value = std::getenv("XTRAIN_CPU_ALGORITHM_SEARCH");
  return value != nullptr && *value != '\0' ? value : "timed";
}

}  // namespace

DEFINE_string(solver, "", "the solver prototxt");
DEFINE_string(model, "", "the net prototxt");
DEFINE_string(weights, "", "weights (.caffemodel) to start from; comma-separated to load several");
DEFINE_string(snapshot, "",
              "a .solverstate to resume from, or 'auto': the newest intact one of the solver's "
              "snapshot_prefix (none: start afresh)");
DEFINE_string(
    gpu, "", "GPU ids to run on, comma-separated, or 'all'; empty: CPU unless the solver says GPU");
DEFINE_string(phase, "",
              "TRAIN or TEST (empty: TEST for test and extract_features, TRAIN for time and draw)");
DEFINE_int32(level, 0, "the net state's level (selects layers by min_level/max_level)");
DEFINE_string(stage, "", "the net state's stages, comma-separated (select layers by stage)");
DEFINE_bool(allow_missing_weights, false,
            "score or deploy even when --weights leaves learnable layers at their random initial "
            "values");
DEFINE_int32(iterations, 50, "how many iterations (batches) to run");
DEFINE_bool(share_activation_memory, true,
            "let blobs whose lifetimes do not overlap share storage");
DEFINE_bool(fuse_layers, true,
            "CPU: an in-place ReLU is done by the Scale or Eltwise sum before it, an in-place "
            "Scale by the BatchNorm before it (the same results bit for bit)");
DEFINE_bool(share_kept_copies, true,
            "CPU: an in-place Scale after BatchNorm reads BatchNorm's kept output instead of "
            "keeping its own copy of it");
DEFINE_bool(channel_blocked_activations, true,
            "CPU: keep activations channel-blocked (nChw16c at AVX-512, nChw8c below) between "
            "convolution, pooling and ReLU");
DEFINE_int32(max_iter, -1, "stop after this many iterations instead of the solver's max_iter");
DEFINE_int32(iter_size, -1,
             "train: batches accumulated per update instead of the solver's iter_size (resuming "
             "on fewer ranks: raise it so the images per update stay the same)");
DEFINE_string(sigint_effect, "stop", "on SIGINT (Ctrl-C): stop, snapshot or none");
DEFINE_string(sighup_effect, "snapshot", "on SIGHUP: stop, snapshot or none");
DEFINE_string(sigterm_effect, "stop",
              "on SIGTERM (a scheduler's time limit): stop, snapshot or none");
DEFINE_string(sigusr1_effect, "stop",
              "on SIGUSR1 (Slurm's --signal=USR1@T warning): stop, snapshot or none");
DEFINE_double(max_seconds, -1,
              "wall-clock budget in seconds: snapshot and exit 75 in time (-1: the solver's "
              "max_seconds; 0: none)");
DEFINE_int32(snapshot_keep, -1,
             "keep only the newest N snapshots (-1: the solver's snapshot_keep; 0: all)");
DEFINE_double(snapshot_minutes, -1,
              "also snapshot every N minutes (-1: the solver's snapshot_minutes; 0: off)");
DEFINE_string(output, "",
              "the file to write (upgrade: never the input file; draw: instead of OUT.svg)");
DEFINE_int32(
    cudnn_workspace_mb, static_cast<std::int32_t>(xtrain::kDefaultCudnnWorkspaceLimitMb),
    "GPU: the most cuDNN workspace one convolution may use, MiB (more: faster algorithms)");
DEFINE_string(cudnn_algorithm_search, "heuristic",
              "GPU: how convolution algorithms are chosen: heuristic (cuDNN's ranking) or timed");
DEFINE_string(cpu_algorithm_search, default_cpu_algorithm_search(),
              "CPU: how each convolution pass's kernel is chosen: timed (run the candidates once "
              "per shape, cache the choice) or heuristic (fixed rules)");
DEFINE_string(gpu_math, "fp32",
              "GPU: fp32 (IEEE float32, Caffe's numbers) or tf32 (tensor cores for GEMMs and "
              "convolutions on Ampere and later: faster, ~3 significant digits)");
DEFINE_string(precision, "",
              "the whole net in one precision: fp32, bf16 or fp16 (16-bit storage, fp32 master "
              "weights; docs/precision.md); unset: the net's forward_type/backward_type fields");
DEFINE_double(
    collective_timeout, 600,
    "several replicas (--gpu=0,1; mpirun, srun, --rendezvous): seconds to wait for the others "
    "before failing (and for a --rendezvous job to form)");
DEFINE_double(gradient_bucket_mb, 25,
              "several replicas: gradients are summed in buckets of about this many MiB");
DEFINE_int32(
    threads, 0,
    "CPU threads (one pool for oneDNN, BLAS and xtrain); 0: OMP_NUM_THREADS, else all CPUs");
DEFINE_bool(training_step, false,
            "time whole training iterations (forward, backward, SGD update), not each layer");
DEFINE_int32(opset, 13, "export: the ONNX operator set version to write (13 to 17)");
DEFINE_bool(dynamic_batch, false,
            "export: let the ONNX model take any batch size (the inputs' first axis is \"N\")");
DEFINE_string(mean, "",
              "classify, detect: a mean image (.binaryproto, from compute_mean) of the net's "
              "input shape to subtract from each image");
DEFINE_string(mean_values, "",
              "classify, detect: per-channel means to subtract instead, comma-separated (B,G,R "
              "for colour, e.g. 104,117,123), or one value for all channels");
DEFINE_double(scale, 1,
              "classify, detect: multiply each pixel by this after subtracting the mean, as the "
              "training's transform_param scale (LeNet: 0.00390625)");
DEFINE_string(onnx, "", "import: the ONNX model to read");
DEFINE_string(output_model, "", "import: the net prototxt to write");
DEFINE_string(output_weights, "", "import: the weights (.caffemodel) to write");
DEFINE_string(darknet_cfg, "",
              "import/export: the Darknet .cfg to read (import, instead of --onnx) or that the "
              "net was converted from (export)");
DEFINE_string(darknet_weights, "",
              "import/export: the Darknet .weights to read (import) or to write from --weights "
              "(export, instead of an ONNX model)");
DEFINE_bool(darknet_partial, false,
            "import: accept a .weights that ends between two layers (a backbone such as "
            "darknet53.conv.74); the layers after keep their fillers");
DEFINE_string(output_train_net, "",
              "import: also write a train/test net (AnnotatedData, YoloLoss per head, "
              "DetectionEvaluate) for a cfg with [yolo] heads");
DEFINE_string(train_source, "train_lmdb", "import: the train net's training LMDB");
DEFINE_string(test_source, "test_lmdb", "import: the train net's test LMDB");
DEFINE_string(label_map_file, "", "import: the train net's label map (optional)");
DEFINE_int32(train_batch_size, 0,
             "import: the train net's training batch (0: the cfg's batch / subdivisions)");
DEFINE_int32(test_batch_size, 1, "import: the train net's test batch");
