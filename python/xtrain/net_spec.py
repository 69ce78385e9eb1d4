"""Writing nets from Python, as pycaffe's ``net_spec`` does.

``layers`` (pycaffe's ``L``) makes a layer of any type by name:
``L.Convolution(bottom, kernel_size=5, num_output=20)`` returns the layer's
output (a ``Top``), which is the input of the next call. Keyword arguments
fill the layer's own ``*_param`` message (``convolution_param`` here) when
that message has the field, else the LayerParameter itself (``loss_weight``,
``include``, ``param``, ...); an argument whose name ends in ``param`` always
goes to the LayerParameter. Dicts become messages, lists become repeated
fields (a single value for a repeated field is a list of one), enums are
given by value (``P.Pooling.MAX``) or by name (``'MAX'``). Two arguments are
the net-spec's own: ``ntop`` (how many outputs; 0 returns the layer itself)
and ``in_place`` (the outputs are the inputs, as for a ReLU).

``NetSpec`` names things: ``n.conv1 = L.Convolution(n.data, ...)`` names the
blob (and its layer) ``conv1``; ``n.to_proto()`` is the NetParameter of
every layer needed for the named outputs, inputs first. Unnamed blobs and
layers get the layer type and a count (``Convolution1``), as in pycaffe.
"""
from collections import Counter, OrderedDict

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message

from .proto import xtrain_pb2

# Layer types that take their parameters in another type's message.
_SHARED_PARAM_FIELDS = {
    "Deconvolution": "convolution_param",
    "Im2col": "convolution_param",
}


def _param_fields_by_type():
    """{layer type: its *_param field of LayerParameter}, read off the
    schema: the message of ``convolution_param`` is ConvolutionParameter,
    so type ``Convolution`` has it."""
    fields = {}
    for field in xtrain_pb2.LayerParameter.DESCRIPTOR.fields:
        if field.name.endswith("_param") and field.message_type is not None:
            message_name = field.message_type.name
            if message_name.endswith("Parameter"):
                fields[message_name[:-len("Parameter")]] = field.name
    fields.update(_SHARED_PARAM_FIELDS)
    return fields


_PARAM_FIELDS = _param_fields_by_type()


def _field_value(field, value):
    """A scalar for `field`: enums may be given by name, or as an enum of
    the extension module (``xtrain.TEST``, which pycaffe code passes as
    ``include=dict(phase=caffe.TEST)``)."""
    if field.enum_type is not None and not isinstance(value, (int, str)) \
            and hasattr(value, "__int__"):
        return int(value)
    if field.enum_type is not None and isinstance(value, str):
        enum_value = field.enum_type.values_by_name.get(value)
        if enum_value is None:
            raise ValueError("'%s' is not a value of %s (its values: %s)"
                             % (value, field.full_name,
                                ", ".join(field.enum_type.values_by_name)))
        return enum_value.number
    return value


def _fill_message(message, value):
    """Fills `message` from a dict of its fields (or a message to copy)."""
    if isinstance(value, _message.Message):
        message.CopyFrom(value)
        return
    if not isinstance(value, dict):
        raise TypeError("%s is a message: give it as a dict of its fields, not %r"
                        % (message.DESCRIPTOR.full_name, value))
    for name, item in value.items():
        assign_field(message, name, item)


def _is_repeated(field):
    # protobuf 7 dropped FieldDescriptor.label for is_repeated (which 4.x
    # and earlier lack).
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == _descriptor.FieldDescriptor.LABEL_REPEATED


def assign_field(message, name, value):
    """Sets field `name` of protobuf `message` from a Python value: a dict
    fills a message field, a list (or tuple) a repeated field, a single
    value for a repeated field becomes a list of one."""
    field = message.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise AttributeError("%s has no field '%s'" % (message.DESCRIPTOR.full_name, name))
    if _is_repeated(field):
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        container = getattr(message, name)
        if field.message_type is not None:
            for item in values:
                _fill_message(container.add(), item)
        else:
            container.extend(_field_value(field, item) for item in values)
    elif field.message_type is not None:
        _fill_message(getattr(message, name), value)
    else:
        setattr(message, name, _field_value(field, value))


class Top(object):
    """One output blob of a layer: output `index` of `function`."""

    def __init__(self, function, index):
        self.fn = function
        self.n = index

    def to_proto(self):
        """The NetParameter of every layer this blob needs."""
        return to_proto(self)

    def _to_proto(self, layers, names, autonames):
        self.fn._to_proto(layers, names, autonames)


class Function(object):
    """A layer: its type, its inputs (Tops) and its parameters, with
    ``tops``, its outputs."""

    def __init__(self, type_name, inputs, params):
        for index, value in enumerate(inputs):
            if not isinstance(value, Top):
                # The wording is pycaffe's, which its tests match exactly.
                raise TypeError("%s input %d is not a Top (type is %s)"
                                % (type_name, index, type(value)))
        self.type_name = type_name
        self.inputs = tuple(inputs)
        self.params = dict(params)
        self.ntop = self.params.pop("ntop", 1)
        self.in_place = self.params.pop("in_place", False)
        self.tops = tuple(Top(self, index) for index in range(self.ntop))

    def _to_proto(self, layers, names, autonames):
        """Adds this layer to `layers` (an ordered dict Function ->
        LayerParameter) after the layers its inputs need."""
        if self in layers:
            return
        bottoms = []
        for top in self.inputs:
            top._to_proto(layers, names, autonames)
            # The producer's own top list, which for an in-place producer
            # is its bottom's name.
            bottoms.append(layers[top.fn].top[top.n])
        layer = xtrain_pb2.LayerParameter()
        layer.type = self.type_name
        layer.bottom.extend(bottoms)
        if self.in_place:
            layer.top.extend(bottoms)
        else:
            layer.top.extend(_name_of(top, names, autonames) for top in self.tops)
        if self.tops:
            layer.name = _name_of(self.tops[0], names, autonames)
        else:
            layer.name = _name_of(self, names, autonames)
        for name, value in self.params.items():
            assign_field(self._message_for(layer, name), name, value)
        layers[self] = layer

    def _message_for(self, layer, argument):
        """Where keyword `argument` goes: the type's *_param message if it
        has that field, else the LayerParameter."""
        if not argument.endswith("param"):
            field = _PARAM_FIELDS.get(self.type_name)
            if field is not None:
                param = getattr(layer, field)
                if argument in param.DESCRIPTOR.fields_by_name:
                    return param
            if argument not in layer.DESCRIPTOR.fields_by_name:
                where = "LayerParameter" if field is None else "%s or LayerParameter" % field
                raise AttributeError("%s layer '%s': no field '%s' in %s"
                                     % (self.type_name, layer.name, argument, where))
        return layer


def _name_of(thing, names, autonames):
    """The name given to a Top or Function, or the next of its type
    (``Convolution1``, ``Convolution2``, ...), remembered in `names`."""
    if thing not in names:
        type_name = thing.fn.type_name if isinstance(thing, Top) else thing.type_name
        autonames[type_name] += 1
        names[thing] = "%s%d" % (type_name, autonames[type_name])
    return names[thing]


def to_proto(*tops):
    """The NetParameter of every layer the given Tops need, each blob and
    layer named automatically."""
    layers = OrderedDict()
    autonames = Counter()
    names = {}
    for top in tops:
        top._to_proto(layers, names, autonames)
    net = xtrain_pb2.NetParameter()
    net.layer.extend(layers.values())
    return net


class NetSpec(object):
    """Names for blobs: assign Tops (or layers of no output) as attributes
    or items, then ``to_proto()`` writes every layer they need, in order,
    with those names."""

    def __init__(self):
        super(NetSpec, self).__setattr__("tops", OrderedDict())

    def __setattr__(self, name, value):
        if not isinstance(value, (Top, Function)):
            raise TypeError("NetSpec.%s: give it one Top (a layer's output) or a layer of "
                            "ntop=0, not %s; unpack a layer of several outputs: "
                            "n.a, n.b = L.Type(..., ntop=2)" % (name, type(value).__name__))
        self.tops[name] = value

    def __getattr__(self, name):
        try:
            return self.tops[name]
        except KeyError:
            raise AttributeError("this NetSpec has no blob named '%s'" % name)

    def __setitem__(self, name, value):
        self.__setattr__(name, value)

    def __getitem__(self, name):
        return self.tops[name]

    def __contains__(self, name):
        return name in self.tops

    def keys(self):
        """The names assigned, in order."""
        return list(self.tops.keys())

    def to_proto(self):
        """The NetParameter of every layer the named blobs need."""
        names = {value: name for name, value in self.tops.items()}
        autonames = Counter()
        layers = OrderedDict()
        for value in self.tops.values():
            value._to_proto(layers, names, autonames)
        net = xtrain_pb2.NetParameter()
        net.layer.extend(layers.values())
        return net


class Layers(object):
    """``layers.Type(*bottoms, **params)`` makes a layer of that type; it
    returns its Top (one output), a tuple of Tops (``ntop`` > 1) or the
    layer itself (``ntop=0``)."""

    def __getattr__(self, type_name):
        if type_name.startswith("__"):
            raise AttributeError(type_name)

        def make_layer(*bottoms, **params):
            function = Function(type_name, bottoms, params)
            if function.ntop == 0:
                return function
            if function.ntop == 1:
                return function.tops[0]
            return function.tops
        make_layer.__name__ = type_name
        return make_layer


class _EnumValues(object):
    """The enum values of one *Parameter message, as attributes."""

    def __init__(self, message_class):
        self._message_class = message_class

    def __getattr__(self, name):
        try:
            return getattr(self._message_class, name)
        except AttributeError:
            enums = self._message_class.DESCRIPTOR.enum_values_by_name
            raise AttributeError("%s has no enum value %s (its values: %s)"
                                 % (self._message_class.DESCRIPTOR.name, name, ", ".join(enums)))


class Parameters(object):
    """``params.Pooling.MAX``: the enum values of ``PoolingParameter`` (any
    ``<Name>Parameter`` message), for layer parameters."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        message_class = getattr(xtrain_pb2, name + "Parameter", None)
        if message_class is None:
            raise AttributeError("the schema has no message %sParameter" % name)
        return _EnumValues(message_class)


layers = Layers()
params = Parameters()
