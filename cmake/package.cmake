# `cpack -G DEB` (in the build folder): two Debian packages, one per install
# component (cmake/install.cmake, python/CMakeLists.txt):
#   hookscope          the programs, man pages, samples, desktop entry, icons;
#   python3-hookscope  the torch bridge (the `hookscope` Python package and its
#                      extension, built against the torch of HOOKSCOPE_PYTHON);
#                      only when the build has the bridge.
# Dependencies are Debian package names: dpkg-shlibdeps reads the ELF files,
# and nothing of CUDA is among them (Note [GPU libraries opened on first use]).
set(CPACK_PACKAGE_NAME hookscope)
set(CPACK_PACKAGE_VENDOR hookscope)
set(CPACK_PACKAGE_CONTACT "hookscope developers <hookscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "visual debugger for autograd graphs, hooks and DDP Reducers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # libopenblas0, libzstd1, libglfw3, ... by name
set(CPACK_STRIP_FILES ON)               # the .debs without debug info
set(CPACK_COMPONENTS_ALL hookscope)

set(CPACK_DEBIAN_HOOKSCOPE_PACKAGE_NAME hookscope)
set(CPACK_DEBIAN_HOOKSCOPE_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_HOOKSCOPE_PACKAGE_DEPENDS fonts-dejavu-core)
set(CPACK_DEBIAN_HOOKSCOPE_PACKAGE_SUGGESTS "xvfb, python3-hookscope")  # --screenshot without a display
set(CPACK_COMPONENT_HOOKSCOPE_DESCRIPTION
    "visual debugger for autograd graphs, hooks and DDP Reducers\n"
    "hookscope-cli records and inspects traces headless; hookscope is the desktop app.")

if(HOOKSCOPE_WITH_TORCH)
  list(APPEND CPACK_COMPONENTS_ALL torch_bridge)
  set(CPACK_DEBIAN_TORCH_BRIDGE_PACKAGE_NAME python3-hookscope)
  set(CPACK_DEBIAN_TORCH_BRIDGE_PACKAGE_SECTION python)
  # The extension is built for one interpreter's ABI and one torch's C++ API.
  set(_next_minor "")
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\2" _minor "${HOOKSCOPE_PYTHON_VERSION}")
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\1" _major "${HOOKSCOPE_PYTHON_VERSION}")
  math(EXPR _next_minor "${_minor} + 1")
  set(CPACK_DEBIAN_TORCH_BRIDGE_PACKAGE_DEPENDS
      "python3 (>= ${HOOKSCOPE_PYTHON_VERSION}), python3 (<< ${_major}.${_next_minor}), python3-torch, hookscope (= ${PROJECT_VERSION})")
  set(CPACK_COMPONENT_TORCH_BRIDGE_DESCRIPTION
      "hookscope's torch bridge: record real PyTorch programs\n"
      "python3 -m hookscope.record -o run.hstrace train.py writes a trace that hookscope and\n"
      "hookscope-cli open.")
endif()
include(CPack)
