"""Where kapi's C API lives in the installed package: the header folder for `#include
<kapi/capi.h>` (docs/guide/c-api.md) and the CMake package config (`find_package(kapi CONFIG)`).
Paths only: nothing here imports the rest of kapi."""

from __future__ import annotations

import os

_ROOT = os.path.dirname(os.path.abspath(__file__))


def get_include() -> str:
    """The folder to add to a C compiler's include path for `#include <kapi/capi.h>`."""
    return os.path.join(_ROOT, "include")


def get_cmake_dir() -> str:
    """The folder holding kapiConfig.cmake: CMake's `kapi_DIR`, or add it to
    CMAKE_PREFIX_PATH, for `find_package(kapi CONFIG)` and its `kapi::headers` target."""
    return os.path.join(_ROOT, "cmake")
