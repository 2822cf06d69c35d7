# The cuda target: built where the CUDA toolkit is found, left out cleanly where it
# is not. The driver (libcuda) is loaded at run time (src/target/cuda/cuda_driver.h),
# so everything links and starts on machines without a GPU; NVRTC links directly.
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::nvrtc)
  message(STATUS "tessel: CUDA toolkit not found; the cuda target is left out")
  return()
endif()
message(STATUS "tessel: cuda target with CUDA ${CUDAToolkit_VERSION} (${CUDAToolkit_BIN_DIR})")

file(GLOB TESSEL_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/target/cuda/*.cpp)
target_sources(tessel PRIVATE ${TESSEL_CUDA_SOURCES})
target_include_directories(tessel PUBLIC ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(tessel PUBLIC CUDA::nvrtc)
target_compile_definitions(tessel PUBLIC TESSEL_WITH_CUDA=1)

# tessel vs cuBLAS in one process (cuBLAS is only the peer here).
if(TARGET CUDA::cublas AND TARGET CUDA::cudart AND EXISTS ${PROJECT_SOURCE_DIR}/bench/bench_gemm_cuda.cpp)
  add_executable(bench_gemm_cuda bench/bench_gemm_cuda.cpp)
  target_link_libraries(bench_gemm_cuda PRIVATE tessel CUDA::cublas CUDA::cudart)
endif()
# Paired plan comparisons on the GPU: barrier planning on/off, pipeline windows.
if(TARGET CUDA::cudart AND EXISTS ${PROJECT_SOURCE_DIR}/bench/bench_cuda_plans.cpp)
  add_executable(bench_cuda_plans bench/bench_cuda_plans.cpp)
  target_link_libraries(bench_cuda_plans PRIVATE tessel CUDA::cudart)
endif()
# Memory-bound GroupIR programs (softmax, layernorm) at the issue's shapes; a
# --compile-only mode needs no GPU.
if(EXISTS ${PROJECT_SOURCE_DIR}/bench/bench_cuda_ops.cpp)
  add_executable(bench_cuda_ops bench/bench_cuda_ops.cpp)
  target_link_libraries(bench_cuda_ops PRIVATE tessel)
  target_compile_definitions(bench_cuda_ops PRIVATE TESSEL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endif()
