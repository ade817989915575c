# kapi's CMake package: find_package(kapi CONFIG REQUIRED) with kapi_DIR (or CMAKE_PREFIX_PATH)
# set to the folder `python -m kapi --cmake-dir` prints. It defines
#   kapi::headers     an INTERFACE target: the include folder of <kapi/capi.h>
#   kapi_INCLUDE_DIR  that folder
#   kapi_VERSION      the kapi package's version (from kapiConfigVersion.cmake)
# An extension also needs Python's headers: find_package(Python3 COMPONENTS Development.Module)
# and Python3_add_library(...), as docs/guide/c-api.md shows. The header is all there is to link
# against: the functions come from kapi's own extension at run time (kapi_import_capi()).
get_filename_component(kapi_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
if(NOT EXISTS "${kapi_INCLUDE_DIR}/kapi/capi.h")
  set(kapi_FOUND FALSE)
  set(kapi_NOT_FOUND_MESSAGE "kapi/capi.h is missing from ${kapi_INCLUDE_DIR}")
  return()
endif()
if(NOT TARGET kapi::headers)
  add_library(kapi::headers INTERFACE IMPORTED)
  set_target_properties(kapi::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                                                 "${kapi_INCLUDE_DIR}")
endif()
