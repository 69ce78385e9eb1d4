"""pycaffe's conveniences on xtrain's Net, with pycaffe's names and
behaviour: the blobs and parameters as ordered dicts, the input and output
names, forward and backward over a range of layers with arrays given and
returned by name, and batch-wise forward_all / forward_backward_all.
"""
from collections import OrderedDict

import numpy as np

from ._xtrain import Net


def _blobs(self):
    """Every blob, by name, in the order the net creates them."""
    if not hasattr(self, "_blobs_dict"):
        self._blobs_dict = OrderedDict(zip(self._blob_names, self._blobs))
    return self._blobs_dict


def _params(self):
    """Each layer that has parameters, by name: its list of parameter blobs."""
    if not hasattr(self, "_params_dict"):
        self._params_dict = OrderedDict(
            (name, layer.blobs)
            for name, layer in zip(self._layer_names, self.layers)
            if len(layer.blobs) > 0)
    return self._params_dict


def _layer_dict(self):
    """Every layer, by name."""
    if not hasattr(self, "_layer_dict_cache"):
        self._layer_dict_cache = OrderedDict(zip(self._layer_names, self.layers))
    return self._layer_dict_cache


def _inputs(self):
    return [self._blob_names[i] for i in self._inputs]


def _outputs(self):
    return [self._blob_names[i] for i in self._outputs]


def _top_names(self):
    """Each layer's top blob names, by layer name."""
    return OrderedDict((name, [self._blob_names[b] for b in self._top_ids(i)])
                       for i, name in enumerate(self._layer_names))


def _bottom_names(self):
    """Each layer's bottom blob names, by layer name."""
    return OrderedDict((name, [self._blob_names[b] for b in self._bottom_ids(i)])
                       for i, name in enumerate(self._layer_names))


def _layer_index(self, name, default):
    if name is None:
        return default
    try:
        return list(self._layer_names).index(name)
    except ValueError:
        raise KeyError("the net has no layer named '%s'" % name)


def _set_arrays(blobs, arrays, kind):
    for name, array in arrays.items():
        if name not in blobs:
            raise KeyError("the net has no blob named '%s' to take %s from" % (name, kind))
        blob = blobs[name]
        target = blob.data if kind == "data" else blob.diff
        if np.shape(array) != target.shape:
            raise ValueError("%s for blob '%s' has shape %s, but the blob has shape %s"
                             % (kind, name, np.shape(array), target.shape))
        target[...] = array


def _forward(self, blobs=None, start=None, end=None, **kwargs):
    """Forward from layer `start` to layer `end` (names; default: all),
    after copying the arrays given by input name into the blobs. Returns
    {output name: array} for the net's outputs (or `end`'s tops), plus the
    blobs named in `blobs`."""
    outputs = set(blobs or [])
    outputs.update(self.top_names[end] if end is not None else self.outputs)
    start_index = _layer_index(self, start, 0)
    end_index = _layer_index(self, end, len(self.layers) - 1)
    _set_given_arrays(self, kwargs, "data", "inputs", self.inputs, start)
    self._forward(start_index, end_index)
    return {name: self.blobs[name].data for name in outputs}


def _set_given_arrays(self, arrays, field, kind, names, start):
    """Copies {blob name: array} into the blobs' `field` (data or diff).
    A pass over the whole net takes only the blobs it begins from, its
    `kind` (inputs or outputs): `names`; one from layer `start` takes any."""
    if not arrays:
        return
    unknown = set(arrays) - set(names)
    if unknown and start is None:
        raise KeyError("%s are not %s of the net (its %s: %s)"
                       % (sorted(unknown), kind, kind, names))
    _set_arrays(self.blobs, arrays, field)


def _backward(self, diffs=None, start=None, end=None, **kwargs):
    """Backward from layer `start` down to layer `end` (names; default:
    all), after copying the gradients given by output name into the blobs'
    diffs. Returns {input name: diff} for the net's inputs (or `end`'s
    bottoms), plus the blobs named in `diffs`."""
    outputs = set(diffs or [])
    outputs.update(self.bottom_names[end] if end is not None else self.inputs)
    start_index = _layer_index(self, start, len(self.layers) - 1)
    end_index = _layer_index(self, end, 0)
    _set_given_arrays(self, kwargs, "diff", "outputs", self.outputs, start)
    self._backward(start_index, end_index)
    return {name: self.blobs[name].diff for name in outputs}


def _item_count(arrays):
    """The number of items N that every array of {name: array} holds (its
    first axis); None when none is given. Arrays of different N cannot be
    run together: item i of one would meet item i of another that is not
    its partner, or none."""
    counts = {}
    for name, array in arrays.items():
        shape = np.shape(array)
        if not shape:
            raise ValueError("'%s' is a single value; forward_all and forward_backward_all take "
                             "arrays of items (N x ...), one item per row" % name)
        counts[name] = shape[0]
    if len(set(counts.values())) > 1:
        raise ValueError("the arrays hold different numbers of items (%s); give each the same "
                         "number, one row per item"
                         % ", ".join("'%s': %d" % item for item in sorted(counts.items())))
    return next(iter(counts.values())) if counts else None


def _batches(self, arrays):
    """Splits {input name: array of N items} into batches of the net's
    batch size (the last padded with zeros)."""
    if not arrays:
        return
    first = next(iter(arrays))
    if first not in self.blobs:
        raise KeyError("the net has no blob named '%s' (its inputs: %s)" % (first, self.inputs))
    batch_size = self.blobs[first].shape[0]
    total = _item_count(arrays)
    for begin in range(0, total, batch_size):
        batch = {}
        for name, array in arrays.items():
            part = np.asarray(array[begin:begin + batch_size], dtype=np.float32)
            if len(part) < batch_size:
                padding = np.zeros((batch_size - len(part),) + part.shape[1:], np.float32)
                part = np.concatenate([part, padding])
            batch[name] = part
        yield batch


def _forward_all(self, blobs=None, **kwargs):
    """Forward over inputs of any number of items, batch by batch; returns
    {output name: array} for all items (the padding of the last batch
    dropped)."""
    total = _item_count(kwargs)
    collected = {}
    for batch in _batches(self, kwargs) if kwargs else [None]:
        outputs = self.forward(blobs=blobs, **(batch or {}))
        for name, value in outputs.items():
            collected.setdefault(name, []).append(value.copy())
    result = {name: np.concatenate(parts) for name, parts in collected.items()}
    if total is not None:
        result = {name: value[:total] for name, value in result.items()}
    return result


def _forward_backward_all(self, blobs=None, diffs=None, **kwargs):
    """forward_all and backward over the same batches: inputs by input name,
    output gradients by output name. Returns (outputs, input diffs)."""
    inputs = {k: v for k, v in kwargs.items() if k in self.inputs}
    output_diffs = {k: v for k, v in kwargs.items() if k in self.outputs}
    unknown = sorted(set(kwargs) - set(inputs) - set(output_diffs))
    if unknown:
        raise KeyError("%s are neither inputs nor outputs of the net (its inputs: %s, its "
                       "outputs: %s)" % (unknown, self.inputs, self.outputs))
    total = _item_count(kwargs)
    forward_parts, backward_parts = {}, {}
    pairs = zip(_batches(self, inputs) if inputs else [None],
                _batches(self, output_diffs) if output_diffs else [None])
    for input_batch, diff_batch in pairs:
        for name, value in self.forward(blobs=blobs, **(input_batch or {})).items():
            forward_parts.setdefault(name, []).append(value.copy())
        for name, value in self.backward(diffs=diffs, **(diff_batch or {})).items():
            backward_parts.setdefault(name, []).append(value.copy())
    outputs = {name: np.concatenate(parts)[:total] for name, parts in forward_parts.items()}
    gradients = {name: np.concatenate(parts)[:total] for name, parts in backward_parts.items()}
    return outputs, gradients


def _load_hdf5(self, filename):
    """Copy the weights of layers named alike from a .caffemodel.h5 (Caffe's
    HDF5 layout; copy_from reads both formats)."""
    self.copy_from(filename)


Net.blobs = property(_blobs)
Net.params = property(_params)
Net.layer_dict = property(_layer_dict)
Net.inputs = property(_inputs)
Net.outputs = property(_outputs)
Net.top_names = property(_top_names)
Net.bottom_names = property(_bottom_names)
Net.forward = _forward
Net.backward = _backward
Net.forward_all = _forward_all
Net.forward_backward_all = _forward_backward_all
Net.load_hdf5 = _load_hdf5
