#include "common/host_tensor.h"

#include <cstdio>
#include <cstdlib>

namespace kb {

const HostTensor<float>& TensorSet::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    std::fprintf(stderr, "kbfleet: tensor '%s' is not in the set\n", name.c_str());
    std::abort();
  }
  return it->second;
}

}  // namespace kb
