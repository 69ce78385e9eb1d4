"""One small net per layer (or pattern) that `xtrain export` maps, on a
(2, 4, 9, 11) input "data": odd sizes, so that Caffe's rounding, clipping
and border divisors of pooling all show. Every learned blob has a filler
with values away from 0 and 1."""

W = "weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'gaussian' std: 0.3 }"



def pooling_layers(pool, windows):
    """One Pooling layer of `pool` (MAX or AVE) on "data" per window, named
    as `windows` names it."""
    return "".join(f"""
      layer {{ name: '{name}' type: 'Pooling' bottom: 'data' top: '{name}'
        pooling_param {{ pool: {pool} {window} }} }}""" for name, window in windows.items())


CASES = {
    "convolution_groups_dilation": f"""
      layer {{ name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
        convolution_param {{ num_output: 6 kernel_size: 3 pad: 2 dilation: 2 group: 2 stride: 2 {W} }} }}""",
    "convolution_rectangular": f"""
      layer {{ name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
        convolution_param {{ num_output: 3 kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 2
                            stride_w: 1 bias_term: false {W} }} }}""",
    "deconvolution": f"""
      layer {{ name: 'deconv' type: 'Deconvolution' bottom: 'data' top: 'deconv'
        convolution_param {{ num_output: 6 kernel_size: 3 stride: 2 pad: 1 group: 2 {W} }} }}""",
    "pooling_max": pooling_layers("MAX", {
        "ceil": "kernel_size: 3 stride: 2",
        "pad": "kernel_size: 3 stride: 2 pad: 1",
        "k2": "kernel_size: 2 stride: 2 pad: 1",
        "rect": "kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 3 pad_h: 1 pad_w: 0"}),
    "pooling_average": pooling_layers("AVE", {
        "ceil": "kernel_size: 2 stride: 2",
        "pad": "kernel_size: 3 stride: 2 pad: 1",
        "s3": "kernel_size: 3 stride: 3 pad: 1",
        "rect": "kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 3 pad_h: 1 pad_w: 0"}),
    # round_mode FLOOR (Caffe master's): ONNX's own rounding, the pad at both ends.
    "pooling_floor": pooling_layers("MAX", {
        "max_pad": "kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR",
        "max_k2": "kernel_size: 2 stride: 2 round_mode: FLOOR"}) + pooling_layers("AVE", {
        "ave_pad": "kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR",
        "ave_rect": "kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 3 pad_h: 1 pad_w: 0 "
                    "round_mode: FLOOR"}),
    "pooling_global": """
      layer { name: 'max' type: 'Pooling' bottom: 'data' top: 'max'
        pooling_param { pool: MAX global_pooling: true } }
      layer { name: 'ave' type: 'Pooling' bottom: 'data' top: 'ave'
        pooling_param { pool: AVE global_pooling: true } }""",
    "lrn": """
      layer { name: 'across' type: 'LRN' bottom: 'data' top: 'across'
        lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 k: 2 } }
      layer { name: 'within' type: 'LRN' bottom: 'data' top: 'within'
        lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 norm_region: WITHIN_CHANNEL } }""",
    "inner_product": f"""
      layer {{ name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'
        inner_product_param {{ num_output: 5 {W} }} }}
      layer {{ name: 'ip_axis2' type: 'InnerProduct' bottom: 'data' top: 'ip_axis2'
        inner_product_param {{ num_output: 5 axis: 2 {W} }} }}
      layer {{ name: 'ip_transposed' type: 'InnerProduct' bottom: 'data' top: 'ip_transposed'
        inner_product_param {{ num_output: 5 transpose: true {W} }} }}""",
    "activations": """
      layer { name: 'leaky' type: 'ReLU' bottom: 'data' top: 'leaky' relu_param { negative_slope: 0.1 } }
      layer { name: 'prelu' type: 'PReLU' bottom: 'data' top: 'prelu'
        prelu_param { filler { type: 'gaussian' std: 0.5 } } }
      layer { name: 'prelu_shared' type: 'PReLU' bottom: 'data' top: 'prelu_shared'
        prelu_param { channel_shared: true } }
      layer { name: 'elu' type: 'ELU' bottom: 'data' top: 'elu' elu_param { alpha: 0.5 } }
      layer { name: 'sigmoid' type: 'Sigmoid' bottom: 'data' top: 'sigmoid' }
      layer { name: 'tanh' type: 'TanH' bottom: 'data' top: 'tanh' }
      layer { name: 'abs' type: 'AbsVal' bottom: 'data' top: 'abs' }
      layer { name: 'power' type: 'Power' bottom: 'data' top: 'power'
        power_param { power: 2 scale: 0.5 shift: 1 } }
      layer { name: 'exp' type: 'Exp' bottom: 'data' top: 'exp' exp_param { base: 2 scale: 0.5 shift: 0.1 } }
      layer { name: 'log' type: 'Log' bottom: 'abs' top: 'log' log_param { base: 10 shift: 0.5 } }
      layer { name: 'bnll' type: 'BNLL' bottom: 'data' top: 'bnll' }
      layer { name: 'threshold' type: 'Threshold' bottom: 'data' top: 'threshold'
        threshold_param { threshold: 0.3 } }
      layer { name: 'relu' type: 'ReLU' bottom: 'data' top: 'relu' }
      layer { name: 'dropout' type: 'Dropout' bottom: 'relu' top: 'relu' }""",
    "batch_norm": """
      layer { name: 'bn' type: 'BatchNorm' bottom: 'data' top: 'bn' batch_norm_param { eps: 0.01 } }
      layer { name: 'bn_scale' type: 'BatchNorm' bottom: 'data' top: 'bn_scale' }
      layer { name: 'scale' type: 'Scale' bottom: 'bn_scale' top: 'bn_scale'
        scale_param { bias_term: true filler { type: 'gaussian' std: 0.5 }
                      bias_filler { type: 'gaussian' std: 0.5 } } }""",
    "scale_and_bias": """
      layer { name: 'scale' type: 'Scale' bottom: 'data' top: 'scale'
        scale_param { filler { type: 'gaussian' std: 0.5 } } }
      layer { name: 'scale_hw' type: 'Scale' bottom: 'data' top: 'scale_hw'
        scale_param { axis: 2 num_axes: 2 bias_term: true filler { type: 'gaussian' std: 0.5 }
                      bias_filler { type: 'gaussian' std: 0.5 } } }
      layer { name: 'pooled' type: 'Pooling' bottom: 'data' top: 'pooled'
        pooling_param { pool: AVE global_pooling: true } }
      layer { name: 'factors' type: 'Flatten' bottom: 'pooled' top: 'factors' }
      layer { name: 'scale_by' type: 'Scale' bottom: 'data' bottom: 'factors' top: 'scale_by'
        scale_param { axis: 0 num_axes: 2 } }
      layer { name: 'scale_by_bottom' type: 'Scale' bottom: 'data' bottom: 'factors'
        top: 'scale_by_bottom' scale_param { axis: 0 } }
      layer { name: 'bias_by' type: 'Bias' bottom: 'data' bottom: 'factors' top: 'bias_by'
        bias_param { axis: 0 } }
      layer { name: 'bias' type: 'Bias' bottom: 'data' top: 'bias'
        bias_param { filler { type: 'gaussian' std: 0.5 } } }""",
    "eltwise": """
      layer { name: 'sigmoid' type: 'Sigmoid' bottom: 'data' top: 'sigmoid' }
      layer { name: 'tanh' type: 'TanH' bottom: 'data' top: 'tanh' }
      layer { name: 'sum' type: 'Eltwise' bottom: 'data' bottom: 'sigmoid' top: 'sum'
        eltwise_param { operation: SUM coeff: 0.5 coeff: -2 } }
      layer { name: 'prod' type: 'Eltwise' bottom: 'data' bottom: 'sigmoid' bottom: 'tanh' top: 'prod'
        eltwise_param { operation: PROD } }
      layer { name: 'max' type: 'Eltwise' bottom: 'data' bottom: 'tanh' top: 'max'
        eltwise_param { operation: MAX } }""",
    "concat_slice_split": """
      layer { name: 'slice' type: 'Slice' bottom: 'data' top: 'a' top: 'b' top: 'c'
        slice_param { axis: 1 slice_point: 1 slice_point: 3 } }
      layer { name: 'halves' type: 'Slice' bottom: 'data' top: 'left' top: 'right'
        slice_param { axis: 3 slice_point: 5 } }
      layer { name: 'split' type: 'Split' bottom: 'c' top: 'c1' top: 'c2' }
      layer { name: 'concat' type: 'Concat' bottom: 'c1' bottom: 'b' bottom: 'a' bottom: 'c2'
        top: 'concat' }
      layer { name: 'concat_w' type: 'Concat' bottom: 'right' bottom: 'left' top: 'concat_w'
        concat_param { axis: -1 } }""",
    "flatten_reshape": """
      layer { name: 'flatten' type: 'Flatten' bottom: 'data' top: 'flatten' }
      layer { name: 'flatten2' type: 'Flatten' bottom: 'data' top: 'flatten2' flatten_param { axis: 2 } }
      layer { name: 'flatten_mid' type: 'Flatten' bottom: 'data' top: 'flatten_mid'
        flatten_param { axis: 1 end_axis: 2 } }
      layer { name: 'reshape' type: 'Reshape' bottom: 'data' top: 'reshape'
        reshape_param { shape { dim: 0 dim: -1 dim: 11 } } }
      layer { name: 'reshape_axis' type: 'Reshape' bottom: 'data' top: 'reshape_axis'
        reshape_param { axis: 1 num_axes: 1 shape { dim: 2 dim: 2 } } }""",
    "crop": """
      layer { name: 'small' type: 'Pooling' bottom: 'data' top: 'small'
        pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
      layer { name: 'crop' type: 'Crop' bottom: 'data' bottom: 'small' top: 'crop'
        crop_param { axis: 2 offset: 1 offset: 2 } }""",
    "tile": """
      layer { name: 'tile' type: 'Tile' bottom: 'data' top: 'tile' tile_param { axis: 1 tiles: 3 } }""",
    "argmax_softmax": """
      layer { name: 'argmax' type: 'ArgMax' bottom: 'data' top: 'argmax' argmax_param { axis: 1 } }
      layer { name: 'top3' type: 'ArgMax' bottom: 'data' top: 'top3'
        argmax_param { top_k: 3 out_max_val: true } }
      layer { name: 'top2' type: 'ArgMax' bottom: 'data' top: 'top2' argmax_param { top_k: 2 } }
      layer { name: 'max2' type: 'ArgMax' bottom: 'data' top: 'max2'
        argmax_param { axis: 3 top_k: 2 out_max_val: true } }
      layer { name: 'softmax' type: 'Softmax' bottom: 'data' top: 'softmax' }
      layer { name: 'softmax2' type: 'Softmax' bottom: 'data' top: 'softmax2' softmax_param { axis: 2 } }""",
    "reduction": """
      layer { name: 'sum' type: 'Reduction' bottom: 'data' top: 'sum'
        reduction_param { operation: SUM axis: 1 coeff: 0.5 } }
      layer { name: 'asum' type: 'Reduction' bottom: 'data' top: 'asum'
        reduction_param { operation: ASUM axis: 2 } }
      layer { name: 'sumsq' type: 'Reduction' bottom: 'data' top: 'sumsq'
        reduction_param { operation: SUMSQ axis: -1 } }
      layer { name: 'mean' type: 'Reduction' bottom: 'data' top: 'mean'
        reduction_param { operation: MEAN axis: 0 } }""",
    "mvn": """
      layer { name: 'mvn' type: 'MVN' bottom: 'data' top: 'mvn' }
      layer { name: 'mvn_across' type: 'MVN' bottom: 'data' top: 'mvn_across'
        mvn_param { across_channels: true } }
      layer { name: 'mvn_mean' type: 'MVN' bottom: 'data' top: 'mvn_mean'
        mvn_param { normalize_variance: false } }""",
    # Newer than Caffe 1.0's zoo: what imports of PyTorch's models produce.
    "newer_layers": """
      layer { name: 'clip' type: 'Clip' bottom: 'data' top: 'clip' clip_param { min: -0.5 max: 1 } }
      layer { name: 'swish' type: 'Swish' bottom: 'data' top: 'swish' swish_param { beta: 1.5 } }
      layer { name: 'gelu' type: 'GELU' bottom: 'data' top: 'gelu' }
      layer { name: 'permute' type: 'Permute' bottom: 'data' top: 'permute'
        permute_param { order: 0 order: 2 order: 3 order: 1 } }
      layer { name: 'upsample' type: 'Upsample' bottom: 'data' top: 'upsample'
        upsample_param { scale: 2 } }""",
}


def prototxt(case):
    return ("name: '" + case + "'\n"
            "layer { name: 'data' type: 'Input' top: 'data'\n"
            "        input_param { shape { dim: 2 dim: 4 dim: 9 dim: 11 } } }\n" + CASES[case])
