# The Python package as a user installs it: `pip wheel` of the repository (scikit-build-core
# and nanobind from the running Python, no network: --no-build-isolation), the wheel installed
# into a scratch folder, and a smoke run that must import moeperm from there.
#   -DPYTHON=<interpreter with scikit-build-core, nanobind, numpy>  -DSOURCE=<repository>
#   -DWORK=<scratch folder>
foreach(v PYTHON SOURCE WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "pip_install.cmake: -D${v}= is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}/wheel" "${WORK}/site")
# Every step runs in WORK: Python puts the working directory first on sys.path, and CTest's
# (this build's python/ folder) holds a `moeperm` package of its own.
file(MAKE_DIRECTORY "${WORK}")
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc WORKING_DIRECTORY "${WORK}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pip install test: ${what} failed (${rc})")
  endif()
endfunction()
# build-dir inside WORK: the test leaves the repository's own build/wheel alone.
step("pip wheel ." "${PYTHON}" -m pip wheel --no-build-isolation --no-deps --disable-pip-version-check
     -q -w "${WORK}/wheel" -C "build-dir=${WORK}/wheel-build" "${SOURCE}")
file(GLOB wheels "${WORK}/wheel/moeperm-*.whl")
list(LENGTH wheels n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "pip install test: expected one moeperm wheel, got '${wheels}'")
endif()
step("pip install <wheel>" "${PYTHON}" -m pip install --no-deps --no-index --disable-pip-version-check
     -q --target "${WORK}/site" ${wheels})
set(smoke [=[
import os, sys
import numpy as np
import moeperm
site = os.path.realpath(sys.argv[1])
assert os.path.realpath(moeperm.__file__).startswith(site), moeperm.__file__
x = np.arange(12, dtype=np.float32).reshape(4, 3)
m = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=np.bool_)
y, yp, s = moeperm.permute_with_routing_map(x, m, num_out_tokens=8)
assert s.tolist() == [0, -1, 2, -1, 1, 3, -1, -1], s
assert (y[:4] == x[[0, 2, 1, 2]]).all() and (y[4:] == 0).all(), y
g, _ = moeperm.permute_with_routing_map_grad(y, None, s, m, 2, 4, False)
assert (g == x * np.array([[1], [1], [2], [0]], dtype=np.float32)).all(), g
print("pip install test: moeperm", moeperm.__version__, "from", moeperm.__file__)
]=])
step("import and run from the installed wheel" ${CMAKE_COMMAND} -E env "PYTHONPATH=${WORK}/site"
     "${PYTHON}" -c "${smoke}" "${WORK}/site")
