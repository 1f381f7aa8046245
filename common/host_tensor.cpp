#include "common/host_tensor.h"

namespace kb {

const HostTensor<float>& TensorSet::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    fatal("tensor '" + name + "' is not in the set");
  }
  return it->second;
}

}  // namespace kb
