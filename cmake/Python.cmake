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
  find_package(Python3 COMPONENTS Interpreter Development.Module NumPy)
  find_package(pybind11 CONFIG QUIET)
  set(XTRAIN_PYTHON_PROTOBUF_FOUND OFF)
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import google.protobuf"
                    RESULT_VARIABLE XTRAIN_PYTHON_PROTOBUF_MISSING OUTPUT_QUIET ERROR_QUIET)
    if(NOT XTRAIN_PYTHON_PROTOBUF_MISSING)
      set(XTRAIN_PYTHON_PROTOBUF_FOUND ON)
    endif()
  endif()
  if(Python3_FOUND AND Python3_NumPy_FOUND AND pybind11_FOUND AND XTRAIN_PYTHON_PROTOBUF_FOUND)
    add_subdirectory(python)
    set(XTRAIN_PYTHON_BUILT ON)
    message(STATUS "Python package: for ${Python3_EXECUTABLE} (Python ${Python3_VERSION}, "
                   "NumPy ${Python3_NumPy_VERSION}, pybind11 ${pybind11_VERSION})")
  elseif(XTRAIN_BUILD_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "XTRAIN_BUILD_PYTHON=ON, but Python 3's headers, NumPy, pybind11 or "
                        "protobuf for ${Python3_EXECUTABLE} are missing: install python3-dev "
                        "python3-numpy pybind11-dev python3-protobuf")
  else()
    message(STATUS "Python package: not built (install python3-dev python3-numpy "
                   "pybind11-dev python3-protobuf)")
  endif()
endif()
