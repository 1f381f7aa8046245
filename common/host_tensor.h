// Host tensors: dense, row-major (C order) arrays with a shape, and named sets of them.
//
// HostTensor<T> owns its data. TensorSet maps a spec's tensor names (input names and parameter
// state_dict keys) to fp32 tensors, as the generator makes them; it owns its tensors.
// Thread safety: plain values; concurrent reads are safe, writes need external locking.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/problem_spec.h"

namespace kb {

template <typename T>
struct HostTensor {
  Shape shape;
  std::vector<T> data;

  HostTensor() = default;
  explicit HostTensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(element_count(shape))) {}
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
};

class TensorSet {
 public:
  void put(const std::string& name, HostTensor<float> tensor) { tensors_[name] = std::move(tensor); }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // Aborts with a message when `name` is absent: the set is built from a validated spec, so a
  // missing name is a programming error in the caller.
  const HostTensor<float>& get(const std::string& name) const;
  const std::map<std::string, HostTensor<float>>& all() const { return tensors_; }

 private:
  std::map<std::string, HostTensor<float>> tensors_;
};

}  // namespace kb
