// NumPy .npy files (format version 1.0, little-endian, C order): how tensors leave kbfleet for
// numpy/PyTorch (kb problems generate, kb bench --export) and how oracle fixtures come back.
//
// Thread safety: free functions; concurrent calls on different paths are safe.
#pragma once

#include <string>

#include "common/host_tensor.h"
#include "common/status.h"

namespace kb {

Status write_npy(const std::string& path, const HostTensor<float>& tensor);   // dtype <f4
Status write_npy(const std::string& path, const HostTensor<double>& tensor);  // dtype <f8

// Reads a <f4 or <f8 array (C order) and widens it to double. Fails with a message naming the
// file on any other dtype, Fortran order, or a truncated file.
Result<HostTensor<double>> read_npy(const std::string& path);

}  // namespace kb
