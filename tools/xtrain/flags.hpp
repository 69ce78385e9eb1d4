// The flags of the `xtrain` tool: Caffe's names, so Caffe job scripts work.
#pragma once

#include <gflags/gflags.h>

DECLARE_string(solver);
DECLARE_string(model);
DECLARE_string(weights);
DECLARE_string(snapshot);
DECLARE_string(gpu);
DECLARE_string(phase);
DECLARE_int32(level);
DECLARE_string(stage);
DECLARE_int32(iterations);
DECLARE_bool(share_activation_memory);
DECLARE_bool(channel_blocked_activations);
DECLARE_bool(share_kept_copies);
DECLARE_bool(fuse_layers);
DECLARE_int32(max_iter);
DECLARE_int32(iter_size);
DECLARE_string(sigint_effect);
DECLARE_string(sighup_effect);
DECLARE_string(sigterm_effect);
DECLARE_string(sigusr1_effect);
DECLARE_double(max_seconds);
DECLARE_int32(snapshot_keep);
DECLARE_double(snapshot_minutes);
DECLARE_string(output);
DECLARE_int32(threads);
DECLARE_double(collective_timeout);
DECLARE_double(gradient_bucket_mb);
DECLARE_int32(cudnn_workspace_mb);
DECLARE_string(cudnn_algorithm_search);
DECLARE_string(cpu_algorithm_search);
DECLARE_bool(allow_missing_weights);
DECLARE_string(gpu_math);
DECLARE_string(precision);
DECLARE_bool(training_step);
DECLARE_int32(opset);
DECLARE_bool(dynamic_batch);
DECLARE_string(mean);
DECLARE_string(mean_values);
DECLARE_double(scale);
DECLARE_string(onnx);
DECLARE_string(output_model);
DECLARE_string(output_weights);
DECLARE_string(darknet_cfg);
DECLARE_string(darknet_weights);
DECLARE_bool(darknet_partial);
DECLARE_string(output_train_net);
DECLARE_string(train_source);
DECLARE_string(test_source);
DECLARE_string(label_map_file);
DECLARE_int32(train_batch_size);
DECLARE_int32(test_batch_size);
