"""xtrain.proto: the generated messages, under our name and Caffe's."""
from google.protobuf import text_format

from xtrain.proto import caffe_pb2, xtrain_pb2


def test_caffe_pb2_is_xtrain_pb2():
    import xtrain.proto.caffe_pb2 as by_path
    assert caffe_pb2 is xtrain_pb2
    assert by_path is xtrain_pb2
    assert isinstance(caffe_pb2.NetParameter(), xtrain_pb2.NetParameter)


def test_caffe_messages_and_enums(repository):
    for name in ("NetParameter", "LayerParameter", "BlobProto", "BlobProtoVector", "Datum",
                 "SolverParameter", "SolverState"):
        assert hasattr(caffe_pb2, name)
    assert caffe_pb2.TRAIN == 0 and caffe_pb2.TEST == 1
    assert caffe_pb2.PoolingParameter.MAX == 0


def test_reads_and_writes_a_prototxt(repository):
    with open(repository + "/models/lenet/lenet_deploy.prototxt") as text:
        net = text_format.Parse(text.read(), caffe_pb2.NetParameter())
    assert net.name == "LeNet"
    assert [layer.name for layer in net.layer][:2] == ["data", "conv1"]
    assert net.layer[1].convolution_param.kernel_size[0] == 5
    again = text_format.Parse(text_format.MessageToString(net), caffe_pb2.NetParameter())
    assert again == net
