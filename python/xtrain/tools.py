"""The command-line tools inside the wheel (scripts/build_wheel.sh): pip
makes a console script for each (``xtrain``, ``convert_imageset``,
``compute_mean``, ...) that calls the function of that name here, which
replaces the Python process with the tool in ``xtrain/bin`` (so signals,
exit status and output are the tool's own).

In a build tree the tools are in ``build/bin`` and this module is unused.
"""
import os
import sys

TOOLS = ("xtrain", "convert_imageset", "convert_annoset", "compute_mean",
         "convert_mnist_data", "idx_to_images")


def tool_path(name):
    """The path of tool `name` in the installed wheel."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", name)


def run(name, argv=None):
    path = tool_path(name)
    if not os.access(path, os.X_OK):
        sys.exit(f"{name}: {path} is missing: the tools come with xtrain's wheel "
                 "(scripts/build_wheel.sh); in a build tree run build/bin/{name}")
    args = sys.argv[1:] if argv is None else list(argv)
    os.execv(path, [name] + args)


def _entry(name):
    def main():
        run(name)
    main.__name__ = name
    main.__doc__ = f"Runs the tool {name} with this process's arguments."
    return main


for _name in TOOLS:
    globals()[_name] = _entry(_name)
# Caffe's name for compute_mean.
compute_image_mean = _entry("compute_mean")
del _name
