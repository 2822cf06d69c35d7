# libtessel_blas.so: sgemm_, dgemm_, cblas_sgemm and cblas_dgemm on kernels that
# tessel's own compiler produced at build time (docs/blas.md). Included at the end
# of CMakeLists.txt.
#
#   tessel_blas_gen (blas/gen/)   runs the compiler: GEMM for f32 and f64, every
#                                 operand layout, a few plans, the cpu target's C++ for
#                                 each vector ISA -> ${TESSEL_BLAS_GEN_DIR}
#   tessel_blas (blas/runtime/)   those units compiled with their ISA's flags, the
#                                 ABI entry points, dispatch and threads. At run time it
#                                 needs no compiler and no cache directory.
# It lives in blas/ rather than src/blas/ because every src/*.cpp joins libtessel.
set(TESSEL_BLAS_GEN_DIR ${PROJECT_BINARY_DIR}/blas_gen)
set(TESSEL_BLAS_ISAS avx512 avx2 sse)

add_executable(tessel_blas_gen blas/gen/blas_gen.cpp blas/gen/blas_kernel.cpp)
target_link_libraries(tessel_blas_gen PRIVATE tessel)

set(TESSEL_BLAS_GEN_OUTPUTS ${TESSEL_BLAS_GEN_DIR}/blas_table.inc)
set(TESSEL_BLAS_KERNEL_SOURCES)
foreach(isa ${TESSEL_BLAS_ISAS})
  list(APPEND TESSEL_BLAS_KERNEL_SOURCES ${TESSEL_BLAS_GEN_DIR}/blas_kernels_${isa}.cpp)
  list(APPEND TESSEL_BLAS_GEN_OUTPUTS ${TESSEL_BLAS_GEN_DIR}/blas_kernels_${isa}.cpp
       ${TESSEL_BLAS_GEN_DIR}/blas_flags_${isa}.rsp)
endforeach()
add_custom_command(
  OUTPUT ${TESSEL_BLAS_GEN_OUTPUTS}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${TESSEL_BLAS_GEN_DIR}
  COMMAND tessel_blas_gen ${TESSEL_BLAS_GEN_DIR}
  DEPENDS tessel_blas_gen
  COMMENT "tessel_blas_gen: emitting the BLAS kernels"
  VERBATIM)

file(GLOB TESSEL_BLAS_RUNTIME_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/blas/runtime/*.cpp)
# cpu_support.cpp: the functions every emitted unit calls through tessel_bind.
add_library(tessel_blas SHARED ${TESSEL_BLAS_RUNTIME_SOURCES} ${PROJECT_SOURCE_DIR}/src/target/cpu/cpu_support.cpp
            ${TESSEL_BLAS_KERNEL_SOURCES} ${TESSEL_BLAS_GEN_DIR}/blas_table.inc)
target_include_directories(tessel_blas PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/blas/runtime
                           ${TESSEL_BLAS_GEN_DIR})
foreach(isa ${TESSEL_BLAS_ISAS})
  # The ISA's flags as the cpu target's JIT passes them (cpu_isa.h), from the
  # generator; the emitted code is not ours to warn about.
  set_source_files_properties(${TESSEL_BLAS_GEN_DIR}/blas_kernels_${isa}.cpp PROPERTIES
    COMPILE_OPTIONS "@${TESSEL_BLAS_GEN_DIR}/blas_flags_${isa}.rsp;-w"
    OBJECT_DEPENDS ${TESSEL_BLAS_GEN_DIR}/blas_flags_${isa}.rsp)
endforeach()
# Only the BLAS symbols are exported (blas_abi.cpp marks them).
set_target_properties(tessel_blas PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_link_libraries(tessel_blas PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
# Every symbol resolved at link time (a sanitized build leaves the sanitizer runtime to
# the executable, so not there).
if(NOT TESSEL_SANITIZE)
  target_link_options(tessel_blas PRIVATE -Wl,--no-undefined)
endif()
install(TARGETS tessel_blas LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# tests/blas (label blas): linked with the library; xerbla_ and cblas_xerbla defined
# in the test executable must be visible to the library's dlsym.
if(TARGET test_blas)
  target_link_libraries(test_blas PRIVATE tessel_blas)
  # The kernel itself, through the public API (f64 on the cpu target).
  target_sources(test_blas PRIVATE ${PROJECT_SOURCE_DIR}/blas/gen/blas_kernel.cpp)
  target_include_directories(test_blas PRIVATE ${PROJECT_SOURCE_DIR}/blas/gen)
  set_target_properties(test_blas PROPERTIES ENABLE_EXPORTS ON)
endif()
# The netlib Level-3 testers from Debian's libblas-test with the library preloaded,
# error exits included; LD_DEBUG=bindings shows that tessel's symbols answered.
find_path(TESSEL_BLAS_TESTERS xblat3s PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blas /usr/lib/blas
          NO_DEFAULT_PATH)
tessel_require(TESSEL_BLAS_TESTERS "the netlib BLAS testers (xblat3s)" libblas-test)
# The CBLAS testers take the other routines from the reference BLAS beside them
# (they need its RowMajorStrg); libblas-test is satisfied by OpenBLAS's libblas.so.3
# too, which lacks it, so the reference one is asked for by name.
find_file(TESSEL_REFERENCE_BLAS libblas.so.3 PATHS ${TESSEL_BLAS_TESTERS} NO_DEFAULT_PATH)
tessel_require(TESSEL_REFERENCE_BLAS "the reference BLAS beside the testers (blas/libblas.so.3)" libblas3)
foreach(tester xblat3s xblat3d xscblat3 xdcblat3)
  add_test(NAME blas_netlib_${tester}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/blas/netlib_tester.sh ${tester} $<TARGET_FILE:tessel_blas>
                   ${TESSEL_BLAS_TESTERS})
  set_tests_properties(blas_netlib_${tester} PROPERTIES LABELS blas TIMEOUT 300)
endforeach()

# sgemm_ and dgemm_ of two libraries side by side through the ABI
# (docs/results/blas-2026-11-30/README.md has a run and its command).
add_executable(bench_blas_abi blas/bench/bench_blas_abi.cpp)
target_link_libraries(bench_blas_abi PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(bench_blas_abi tessel_blas)

# The kernels of the other ISAs (TESSEL_CPU_ISA picks them; a CPU that cannot run
# one says so on stderr and runs its own), and other thread counts.
foreach(isa avx2 sse)
  add_test(NAME blas_isa_${isa} COMMAND test_blas --gtest_filter=Blas.*Layout*:Blas.*Larger*:Blas.EightThreads*)
  set_tests_properties(blas_isa_${isa} PROPERTIES LABELS blas ENVIRONMENT TESSEL_CPU_ISA=${isa})
endforeach()
foreach(threads 1 3)
  add_test(NAME blas_threads_${threads} COMMAND test_blas --gtest_filter=Blas.*Larger*:Blas.EightThreads*)
  set_tests_properties(blas_threads_${threads} PROPERTIES LABELS blas ENVIRONMENT TESSEL_NUM_THREADS=${threads})
endforeach()
# No library constructors of ours (LD_PRELOAD would run them in every process): no
# static initializers, and no libgcc CPU-model constructor.
add_test(NAME blas_no_library_constructors
         COMMAND sh -c "s=$(nm \"$0\") && ! printf '%s\\n' \"$s\" | grep -E '_GLOBAL__sub_I|__cpu_indicator_init'"
                 $<TARGET_FILE:tessel_blas>)
set_tests_properties(blas_no_library_constructors PROPERTIES LABELS blas)
