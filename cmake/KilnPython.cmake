# The Python module (python/): built when KILN_PYTHON is ON, or AUTO (the default)
# and pybind11 and the headers of the Python found are both there.
if(KILN_PYTHON STREQUAL "OFF")
  return()
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module)
if(Python3_FOUND)
  find_package(pybind11 CONFIG)
endif()
if(Python3_FOUND AND pybind11_FOUND)
  message(STATUS "Kiln: building the Python module for Python ${Python3_VERSION} (pybind11 ${pybind11_VERSION})")
  add_subdirectory(python)
  set(KILN_PYTHON_DIR ${PROJECT_BINARY_DIR}/python)  # goes on PYTHONPATH
elseif(KILN_PYTHON STREQUAL "AUTO")
  message(STATUS "Kiln: not building the Python module (needs pybind11 and Python's headers: "
                 "python3-pybind11 python3-dev)")
else()
  message(FATAL_ERROR "KILN_PYTHON is ON but pybind11 or Python's headers were not found (python3-pybind11 python3-dev)")
endif()
