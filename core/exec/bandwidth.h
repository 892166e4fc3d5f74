// The device's memory bandwidth, measured (a large copy, read and write counted, best of a few),
// once per process and device: what a kernel's achieved GB/s is set against.
#pragma once
#include <string>

namespace ls {
// GB/s; 0 where the device cannot be measured (no GPU). Thread-safe.
double memory_bandwidth_gbps(const std::string& device);
}  // namespace ls
