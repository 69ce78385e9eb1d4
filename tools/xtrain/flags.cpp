#include "flags.hpp"

#include <cstdint>

#include "xtrain/cudnn_options.hpp"

DEFINE_string(solver, "", "train: the solver prototxt");
DEFINE_string(model, "", "test/time: the net prototxt");
DEFINE_string(weights, "",
              "train/test: weights (.caffemodel) to start from; comma-separated to load several");
DEFINE_string(snapshot, "",
              "train: a .solverstate to resume from, or 'auto': the newest intact snapshot of "
              "the solver's snapshot_prefix, or a fresh start if there is none");
DEFINE_string(
    gpu, "", "GPU ids to run on, comma-separated, or 'all'; empty: CPU unless the solver says GPU");
DEFINE_string(phase, "", "time: TRAIN (default) or TEST; test: TEST (default) or TRAIN");
DEFINE_int32(level, 0, "the net state's level (selects layers by min_level/max_level)");
DEFINE_string(stage, "", "the net state's stages, comma-separated (select layers by stage)");
DEFINE_int32(iterations, 50, "test/time: how many iterations (batches) to run");
DEFINE_bool(share_activation_memory, true,
            "train/test/time: let blobs whose lifetimes do not overlap share storage (diffs in "
            "backward, data in test nets)");
DEFINE_bool(channel_blocked_activations, true,
            "train/test/time (CPU): keep activations channel-blocked (nChw16c) between "
            "convolutions, pooling and ReLU instead of reordering them at every layer");
DEFINE_int32(max_iter, -1,
             "train: stop after this many iterations instead of the solver's max_iter");
DEFINE_string(sigint_effect, "stop", "train: on SIGINT (Ctrl-C): stop, snapshot or none");
DEFINE_string(sighup_effect, "snapshot", "train: on SIGHUP: stop, snapshot or none");
DEFINE_string(sigterm_effect, "stop",
              "train: on SIGTERM (a scheduler's time limit): stop, snapshot or none");
DEFINE_string(sigusr1_effect, "stop",
              "train: on SIGUSR1 (Slurm's --signal=USR1@T warning): stop, snapshot or none");
DEFINE_double(max_seconds, -1,
              "train: wall-clock budget of this run in seconds; training snapshots and exits "
              "(code 75) in time to stay inside it (-1: the solver's max_seconds; 0: none)");
DEFINE_int32(snapshot_keep, -1,
             "train: keep only the newest N snapshots (-1: the solver's snapshot_keep; 0: all)");
DEFINE_double(snapshot_minutes, -1,
              "train: also snapshot every N minutes (-1: the solver's snapshot_minutes; 0: off)");
DEFINE_string(output, "", "upgrade: where to write the upgraded file (never the input file)");
DEFINE_int32(cudnn_workspace_mb, static_cast<std::int32_t>(xtrain::kDefaultCudnnWorkspaceLimitMb),
             "train/test/time on a GPU: the most cuDNN workspace one convolution pass may use, "
             "in MiB (Caffe's limit is 8; more lets cuDNN choose faster algorithms)");
DEFINE_string(cudnn_algorithm_search, "heuristic",
              "train/test/time on a GPU: how convolution algorithms are chosen: heuristic "
              "(cuDNN's ranking) or timed (cuDNN runs each candidate once per shape)");
DEFINE_double(collective_timeout, 600,
              "train with several processes (mpirun, srun): seconds a gradient exchange may wait "
              "for the other ranks before the job fails with an error (a rank died or hangs); "
              "allow for the root's test passes and snapshots");
DEFINE_int32(threads, 0,
             "train/test/time: CPU threads (one pool for oneDNN, BLAS and xtrain); 0: "
             "OMP_NUM_THREADS if set, else every CPU this process may use");
DEFINE_bool(training_step, false,
            "time: time whole training iterations (forward, backward, momentum-SGD update) "
            "through the solver instead of each layer");
