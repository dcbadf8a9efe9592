#===- MHAAddLibrary.cmake - helpers for MHA libraries ---------------------===#
#
# Every MHA library is a static, position-independent archive that links the
# shared libMLIR.so (never the static libMLIR*.a archives: mixing the two in one
# binary duplicates MLIR's global registries). Position independence lets the
# same archives go into mha-opt and into the plugin loaded by stock mlir-opt.
#
# Why not upstream's add_mlir_library: checked against Debian's MLIR 22
# config, it (1) links the static component libraries named in LINK_LIBS
# (MLIRIR...) because MLIRConfig.cmake leaves MLIR_LINK_MLIR_DYLIB unset, so
# mixing them with libMLIR.so would duplicate MLIR's registries; (2) adds the
# library to MLIR's own export set (MLIR_EXPORTS / MLIRTargets) rather than
# ours (MHATargets, what find_package(MHA) imports); (3) builds an extra
# object library per target. What remains of it that we need -- PIC,
# llvm_update_compile_flags, one install rule -- is the few lines below.
#
#===----------------------------------------------------------------------===#

set_property(GLOBAL PROPERTY MHA_EXPORTED_LIBS "")

# mha_add_library(name SRCS... [NO_MLIR] [DEPENDS tgt...] [LINK_LIBS lib...])
# NO_MLIR: a C library that links neither libMLIR nor libLLVM (what compiled
# code ships with, lib/ExecutionEngine).
function(mha_add_library name)
  cmake_parse_arguments(ARG "NO_MLIR" "" "DEPENDS;LINK_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${MHA_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${MHA_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:include>)
  if(ARG_NO_MLIR)
    target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS})
  else()
    target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS} MLIR LLVM)
    llvm_update_compile_flags(${name})
  endif()
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  # Consumers of instrumented archives must link the sanitizer runtimes.
  if(MHA_ENABLE_SANITIZERS)
    target_link_options(${name} INTERFACE ${MHA_SANITIZER_FLAGS})
  endif()
  install(TARGETS ${name} EXPORT MHATargets
    ARCHIVE DESTINATION lib COMPONENT ${name})
  set_property(GLOBAL APPEND PROPERTY MHA_EXPORTED_LIBS ${name})
endfunction()

# The RUNPATH installed binaries get: our lib/ ($ORIGIN/../lib, where the
# runtimes are) and the library directory of the LLVM/MLIR they were built
# against, for libMLIR.so.22.1 and libLLVM.so.22.1. Debian's
# /usr/lib/llvm-22/lib is not on the loader's search path, and our prefix
# need not be LLVM's. (add_llvm_executable installs with $ORIGIN/../lib only:
# right for LLVM's own tools, which are installed beside libLLVM; its build
# RUNPATH names LLVM's directory, which is why the build tree's tools ran.)
set(MHA_INSTALL_RPATH "\$ORIGIN/../lib")
if(NOT LLVM_LIBRARY_DIR IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  list(APPEND MHA_INSTALL_RPATH "${LLVM_LIBRARY_DIR}")
endif()

# mha_install_tool(name): installs the executable `name` into bin/, with that
# RUNPATH. Everything it finds at run time is under the prefix or LLVM's
# (tools/support: the runtimes in lib/ beside bin/), so the prefix can be
# moved as a whole.
function(mha_install_tool name)
  set_target_properties(${name} PROPERTIES INSTALL_RPATH "${MHA_INSTALL_RPATH}")
  install(TARGETS ${name} RUNTIME DESTINATION bin)
endfunction()
