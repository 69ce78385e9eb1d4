"""The layers that the detection examples' generators (ssd/generate.py,
yolo/generate.py) write alike: the AnnotatedData layers reading the
Fashion-MNIST detection LMDBs of examples/detection, and a 2 x 2 max pool."""

DATA = "data/fashion_detection"
LABEL_MAP = f'label_map_file: "{DATA}/labelmap.prototxt"'


def annotated_data(phase, transform, annotated_data_param):
    """The AnnotatedData layer of `phase` (TRAIN or TEST), reading
    DATA/train_lmdb or DATA/test_lmdb 16 records a batch. `transform` is what
    goes inside transform_param's braces; `annotated_data_param` is that
    field, written out (it names LABEL_MAP)."""
    return (f'layer {{\n'
            f'  name: "data" type: "AnnotatedData" top: "data" top: "label"\n'
            f'  include {{ phase: {phase} }}\n'
            f'  transform_param {{ {transform} }}\n'
            f'  data_param {{ source: "{DATA}/{phase.lower()}_lmdb"'
            f' batch_size: 16 backend: LMDB }}\n'
            f'  {annotated_data_param}\n'
            f'}}\n')


def pool(name, bottom):
    return (f'layer {{ name: "{name}" type: "Pooling" bottom: "{bottom}" top: "{name}"\n'
            f'  pooling_param {{ pool: MAX kernel_size: 2 stride: 2 }} }}\n')
