# XTRAIN_BUILD_PYTHON: the Python package (python/), built when Python 3's
# headers, NumPy, pybind11 and the protobuf runtime for Python are found
# (AUTO), or required (ON). The protobuf runtime is checked by importing it:
# xtrain.proto, net_spec, io and draw all stand on it, and a package that
# fails at `import xtrain` is worse than none.
#
# Debian's own interpreter first: its packages (python3-numpy, pybind11-dev,
# python3-pytest) are what scripts/install_deps.sh installs, and a pyenv or
# virtual environment earlier on PATH usually lacks them. Give
# -DPython3_EXECUTABLE=... to build for another interpreter.
set(XTRAIN_PYTHON_BUILT OFF)
if(NOT XTRAIN_BUILD_PYTHON STREQUAL "OFF")
  if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module Development.Embed NumPy)
  find_package(pybind11 CONFIG QUIET)
  # What is missing, as the Debian packages that bring it.
  set(XTRAIN_PYTHON_MISSING)
  if(NOT Python3_Interpreter_FOUND OR NOT Python3_Development.Module_FOUND)
    list(APPEND XTRAIN_PYTHON_MISSING python3-dev)
  endif()
  # NumPy and protobuf are needed at run time only. `pip install .`
  # (scikit-build-core, which defines SKBUILD) builds in an environment of
  # its own without them, and installs them as the package's dependencies
  # (pyproject.toml), so only a plain CMake build checks for them.
  if(NOT Python3_NumPy_FOUND AND NOT SKBUILD)
    list(APPEND XTRAIN_PYTHON_MISSING python3-numpy)
  endif()
  if(NOT pybind11_FOUND)
    list(APPEND XTRAIN_PYTHON_MISSING pybind11-dev)
  endif()
  if(Python3_Interpreter_FOUND AND NOT SKBUILD)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import google.protobuf"
                    RESULT_VARIABLE XTRAIN_PYTHON_PROTOBUF_MISSING OUTPUT_QUIET ERROR_QUIET)
    if(XTRAIN_PYTHON_PROTOBUF_MISSING)
      list(APPEND XTRAIN_PYTHON_MISSING python3-protobuf)
    endif()
  endif()
  list(JOIN XTRAIN_PYTHON_MISSING " " XTRAIN_PYTHON_MISSING_TEXT)
  if(NOT XTRAIN_PYTHON_MISSING)
    add_subdirectory(python)
    set(XTRAIN_PYTHON_BUILT ON)
    message(STATUS "Python package: for ${Python3_EXECUTABLE} (Python ${Python3_VERSION}, "
                   "NumPy ${Python3_NumPy_VERSION}, pybind11 ${pybind11_VERSION})")
  elseif(XTRAIN_BUILD_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "XTRAIN_BUILD_PYTHON=ON, but the Python package cannot be built for "
                        "${Python3_EXECUTABLE}: install ${XTRAIN_PYTHON_MISSING_TEXT} "
                        "(or give -DPython3_EXECUTABLE= an interpreter that has them)")
  else()
    message(STATUS "Python package: not built for ${Python3_EXECUTABLE} (install "
                   "${XTRAIN_PYTHON_MISSING_TEXT})")
  endif()
endif()
