// The backend of each device: the one place that names them all (Inductor's
// register_backend_for_device). A target of its own above backend/cpu and backend/cuda.
#include "backend/backend.h"
#include "cuda/driver.h"
#include "cuda/nvrtc_compiler.h"

namespace ls {

std::unique_ptr<Backend> make_cpu_backend();   // backend/cpu/cpu_backend.cpp
std::unique_ptr<Backend> make_cuda_backend();  // backend/cuda/cuda_backend.cpp

std::unique_ptr<Backend> make_backend(Device d) { return d == Device::cuda ? make_cuda_backend() : make_cpu_backend(); }

bool can_compile_for(Device d) { return d == Device::cpu || have_nvrtc(); }

void start_device(Device d) {
  if (d == Device::cuda) CudaDriver::get();
}

}  // namespace ls
