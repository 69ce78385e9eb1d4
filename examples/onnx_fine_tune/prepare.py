"""An imported torchvision ResNet-18, set up to fine-tune on Fashion-MNIST
PNGs (README.md): the images and their train/test lists, the model exported
by torch.onnx.export (random weights: no download) and imported with
`xtrain import --onnx`, and a train/test net around it -- ImageData layers
that resize the 28x28 grey images to 64x64 colour ones, a new 10-class head
(renamed, so the 1000-class weights are not copied into it), a
SoftmaxWithLoss and an Accuracy -- with its solver.

  PYTHONPATH=build/python scripts/onnx_test_env.sh build/onnx-venv \\
      examples/onnx_fine_tune/prepare.py [WORKDIR]

(the ONNX test environment: torch, torchvision and onnx.) WORKDIR defaults
to data/onnx_fine_tune; XTRAIN_BUILD_DIR picks the build (default build),
FASHION_MNIST_DIR the IDX files (default Debian's)."""
import os
import subprocess
import sys

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "onnx"))
from google.protobuf import text_format  # noqa: E402

import onnx_harness  # noqa: E402,F401  (onnx before torch)
import torchvision_models  # noqa: E402
from xtrain.proto import xtrain_pb2  # noqa: E402

WORK = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "data/onnx_fine_tune")
BIN = os.path.join(os.environ.get("XTRAIN_BUILD_DIR", os.path.join(SOURCE_DIR, "build")), "bin")
FASHION = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
CLASSES = "tshirt_top,trouser,pullover,dress,coat,sandal,shirt,sneaker,bag,ankle_boot"
SIZE = 64          # the images are resized to SIZE x SIZE, and the model exported at it
TRAIN_IMAGES = 2000  # of the test set's first 2400; the other 400 are held out


def main():
    images = os.path.join(WORK, "images")
    os.makedirs(WORK, exist_ok=True)
    if not os.path.exists(os.path.join(images, "list.txt")):
        subprocess.run([os.path.join(BIN, "idx_to_images"), "--count=2400",
                        f"--class_names={CLASSES}",
                        os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"),
                        os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz"), images], check=True)
    lines = open(os.path.join(images, "list.txt")).read().splitlines()
    with open(os.path.join(WORK, "train.txt"), "w") as train:
        train.write("\n".join(lines[:TRAIN_IMAGES]) + "\n")
    with open(os.path.join(WORK, "test.txt"), "w") as test:
        test.write("\n".join(lines[TRAIN_IMAGES:]) + "\n")

    onnx_path = os.path.join(WORK, "resnet18.onnx")
    torchvision_models.export("resnet18", onnx_path, opset=13, size=SIZE)
    deploy = os.path.join(WORK, "resnet18.prototxt")
    subprocess.run([os.path.join(BIN, "xtrain"), "import", f"--onnx={onnx_path}",
                    f"--output_model={deploy}",
                    f"--output_weights={os.path.join(WORK, 'resnet18.caffemodel')}"], check=True)

    net = xtrain_pb2.NetParameter()
    text_format.Merge(open(deploy).read(), net)
    assert net.layer[0].type == "Input", net.layer[0].type
    data_top = net.layer[0].top[0]
    layers = list(net.layer[1:])
    del net.layer[:]
    for phase, source, batch in ((xtrain_pb2.TRAIN, "train.txt", 32),
                                 (xtrain_pb2.TEST, "test.txt", 50)):
        data = net.layer.add(name="fashion", type="ImageData", top=[data_top, "label"])
        data.include.add(phase=phase)
        param = data.image_data_param
        param.source = os.path.join(WORK, source)
        param.root_folder = images + "/"
        param.batch_size = batch
        param.new_height = param.new_width = SIZE
        param.is_color = True  # the grey images as 3 equal channels: ResNet's input
        param.shuffle = phase == xtrain_pb2.TRAIN
        data.transform_param.scale = 1 / 255.0
        data.transform_param.mean_value.append(73)  # compute_mean's, examples/fashion_mnist_png
    net.layer.extend(layers)
    head = net.layer[-1]
    assert head.type == "InnerProduct", head.type
    head.name = "fashion_classes"
    head.inner_product_param.num_output = 10
    head.inner_product_param.weight_filler.type = "xavier"
    scores = head.top[0]
    net.layer.add(name="loss", type="SoftmaxWithLoss", bottom=[scores, "label"], top=["loss"])
    accuracy = net.layer.add(name="accuracy", type="Accuracy", bottom=[scores, "label"],
                             top=["accuracy"])
    accuracy.include.add(phase=xtrain_pb2.TEST)
    with open(os.path.join(WORK, "train_val.prototxt"), "w") as out:
        out.write(text_format.MessageToString(net))
    with open(os.path.join(WORK, "solver.prototxt"), "w") as out:
        out.write(f'net: "{os.path.join(WORK, "train_val.prototxt")}"\n'
                  "test_iter: 8\ntest_interval: 50\n"
                  'base_lr: 0.01\nmomentum: 0.9\nweight_decay: 0.0001\nlr_policy: "fixed"\n'
                  "display: 10\nmax_iter: 150\nsnapshot_after_train: false\nsolver_mode: CPU\n"
                  f'snapshot_prefix: "{os.path.join(WORK, "resnet18_fashion")}"\n')
    print(f"prepare: {WORK}/solver.prototxt and {WORK}/resnet18.caffemodel")


if __name__ == "__main__":
    main()
