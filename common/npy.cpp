#include "common/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

namespace kb {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::string header_for(const char* descr, const Shape& shape) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";  // NumPy's one-tuple "(3,)"
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                       dims + "), }";
  // Magic (6) + version (2) + header length (2) + header + '\n' must be a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  return header + "\n";
}

template <typename T>
Status write_array(const std::string& path, const char* descr, const HostTensor<T>& tensor) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return Status::io_error(path + ": cannot open for writing");
  const std::string header = header_for(descr, tensor.shape);
  const uint16_t header_len = static_cast<uint16_t>(header.size());
  out.write(kMagic, 6);
  out.put(1);
  out.put(0);
  out.put(static_cast<char>(header_len & 0xff));
  out.put(static_cast<char>(header_len >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(tensor.data.data()),
            static_cast<std::streamsize>(tensor.data.size() * sizeof(T)));
  if (!out) return Status::io_error(path + ": write failed");
  return Status::ok();
}

Result<Shape> parse_shape(const std::string& header, const std::string& path) {
  static const std::regex kShape("'shape':\\s*\\(([^)]*)\\)");
  std::smatch m;
  if (!std::regex_search(header, m, kShape)) return Status::invalid_argument(path + ": npy header has no shape");
  Shape shape;
  static const std::regex kInt("[0-9]+");
  const std::string dims = m[1].str();
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), kInt); it != std::sregex_iterator(); ++it) {
    shape.push_back(std::stoll(it->str()));
  }
  return shape;
}

}  // namespace

Status write_npy(const std::string& path, const HostTensor<float>& tensor) {
  return write_array(path, "<f4", tensor);
}

Status write_npy(const std::string& path, const HostTensor<double>& tensor) {
  return write_array(path, "<f8", tensor);
}

Result<HostTensor<double>> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(path + ": cannot open");
  char prefix[10];
  if (!in.read(prefix, 10) || std::memcmp(prefix, kMagic, 6) != 0) {
    return Status::invalid_argument(path + ": not an .npy file");
  }
  size_t header_len = static_cast<unsigned char>(prefix[8]) | (static_cast<unsigned char>(prefix[9]) << 8);
  if (prefix[6] != 1) return Status::invalid_argument(path + ": only .npy format version 1.0 is read");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len))) {
    return Status::invalid_argument(path + ": truncated header");
  }
  if (header.find("'fortran_order': False") == std::string::npos) {
    return Status::invalid_argument(path + ": expected C order (fortran_order False)");
  }
  const bool is_f8 = header.find("'<f8'") != std::string::npos;
  const bool is_f4 = header.find("'<f4'") != std::string::npos;
  if (!is_f8 && !is_f4) return Status::invalid_argument(path + ": expected dtype <f4 or <f8");
  KB_ASSIGN_OR_RETURN(Shape shape, parse_shape(header, path));
  HostTensor<double> tensor(shape);
  const size_t n = tensor.data.size();
  if (is_f8) {
    in.read(reinterpret_cast<char*>(tensor.data.data()), static_cast<std::streamsize>(n * 8));
  } else {
    std::vector<float> values(n);
    in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(n * 4));
    for (size_t i = 0; i < n; ++i) tensor.data[i] = values[i];
  }
  if (!in) return Status::invalid_argument(path + ": truncated data (expected " + std::to_string(n) + " values)");
  return tensor;
}

}  // namespace kb
