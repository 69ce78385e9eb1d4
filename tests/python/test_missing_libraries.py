"""The message of an import that fails for want of a CUDA library
(xtrain/_missing_libraries.py): the loader's error, with what to install."""
from xtrain import _missing_libraries


def loader_error(soname):
    return ImportError("%s: cannot open shared object file: No such file or directory" % soname)


def test_a_missing_cuda_library_is_named_with_what_to_do(monkeypatch):
    for soname in ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13",
                   "libcudnn.so.9", "libcudnn_ops.so.9", "libnccl.so.2"):
        explained = _missing_libraries.explain(loader_error(soname))
        assert isinstance(explained, ImportError), soname
        text = str(explained)
        assert text.startswith("xtrain: %s was not found" % soname), text
        assert "LD_LIBRARY_PATH" in text and "cannot open shared object file" in text, text


def test_the_cuda_wheel_names_its_nvidia_requirements(monkeypatch):
    monkeypatch.setattr(_missing_libraries, "_nvidia_requirements",
                        lambda: ["nvidia-cudnn-cu13>=9.19,<10", "nvidia-cublas>=13.1,<14"])
    text = str(_missing_libraries.explain(loader_error("libcudnn.so.9")))
    assert "pip install 'nvidia-cudnn-cu13>=9.19,<10' 'nvidia-cublas>=13.1,<14'" in text, text
    assert "--no-deps" in text and "CPU wheel" in text, text


def test_a_build_tree_says_how_to_build_without_cuda(monkeypatch):
    monkeypatch.setattr(_missing_libraries, "_nvidia_requirements", lambda: [])
    text = str(_missing_libraries.explain(loader_error("libnccl.so.2")))
    assert "-DXTRAIN_USE_CUDA=OFF" in text and "pip install" not in text, text


def test_other_import_errors_are_left_alone():
    assert _missing_libraries.explain(loader_error("libprotobuf.so.32")) is None
    assert _missing_libraries.explain(ImportError("No module named 'numpy'")) is None
    # The driver is never linked: its absence is no import error of ours.
    assert _missing_libraries.explain(loader_error("libcuda.so.1")) is None
