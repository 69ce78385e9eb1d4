# XTRAIN_BUILD_PYTHON: the Python package (python/), built when Python 3's
# headers, NumPy and pybind11 are found (AUTO), or required (ON).
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
  if(Python3_FOUND AND Python3_NumPy_FOUND AND pybind11_FOUND)
    add_subdirectory(python)
    set(XTRAIN_PYTHON_BUILT ON)
    message(STATUS "Python package: for ${Python3_EXECUTABLE} (Python ${Python3_VERSION}, "
                   "NumPy ${Python3_NumPy_VERSION}, pybind11 ${pybind11_VERSION})")
  elseif(XTRAIN_BUILD_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "XTRAIN_BUILD_PYTHON=ON, but Python 3's headers, NumPy or pybind11 "
                        "are missing: install python3-dev python3-numpy pybind11-dev")
  else()
    message(STATUS "Python package: not built (install python3-dev python3-numpy "
                   "pybind11-dev)")
  endif()
endif()
