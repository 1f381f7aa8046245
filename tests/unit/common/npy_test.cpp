// .npy reading and writing (common/npy.h): round trips, NumPy's header layout, and the errors
// for files that are not what they claim.
#include "common/npy.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

namespace kb {
namespace {

namespace fs = std::filesystem;

class NpyTest : public testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string bytes_of(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void write_bytes(const std::string& file, const std::string& bytes) {
    std::ofstream(file, std::ios::binary) << bytes;
  }
  // The header text of a v1.0 file (without magic, version and length).
  static std::string header_of(const std::string& bytes) {
    const size_t len =
        static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    return bytes.substr(10, len);
  }

  ::kb::test::TempDir dir_{"kb-npy-test"};
};

HostTensor<float> ramp_f32(Shape shape) {
  HostTensor<float> t(std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.25f * static_cast<float>(i) - 1.0f;
  return t;
}

TEST_F(NpyTest, Float32RoundTrip) {
  HostTensor<float> t = ramp_f32({2, 3, 4});
  t.data[5] = std::numeric_limits<float>::denorm_min();
  t.data[6] = -0.0f;
  KB_ASSERT_OK(write_npy(path("a.npy"), t));
  Result<HostTensor<double>> back = read_npy(path("a.npy"));
  KB_ASSERT_OK(back);
  EXPECT_EQ(back->shape, (Shape{2, 3, 4}));
  ASSERT_EQ(back->data.size(), t.data.size());
  for (size_t i = 0; i < t.data.size(); ++i)
    EXPECT_EQ(back->data[i], static_cast<double>(t.data[i])) << i;
  EXPECT_TRUE(std::signbit(back->data[6]));
  EXPECT_EQ(fs::file_size(path("a.npy")), 128u + 24 * 4);
}

TEST_F(NpyTest, Float64RoundTripKeepsEveryBit) {
  HostTensor<double> t({3, 2});
  t.data = {1.0 / 3.0, -2.5e-300, 1e300, 0.1, -0.0, 6.02214076e23};
  KB_ASSERT_OK(write_npy(path("d.npy"), t));
  Result<HostTensor<double>> back = read_npy(path("d.npy"));
  KB_ASSERT_OK(back);
  EXPECT_EQ(back->shape, (Shape{3, 2}));
  EXPECT_EQ(back->data, t.data);
  EXPECT_NE(header_of(bytes_of(path("d.npy"))).find("'descr': '<f8'"), std::string::npos);
}

TEST_F(NpyTest, ZeroDimensionalArray) {
  HostTensor<float> t(Shape{});
  ASSERT_EQ(t.data.size(), 1u);
  t.data[0] = 3.5f;
  KB_ASSERT_OK(write_npy(path("s.npy"), t));
  EXPECT_NE(header_of(bytes_of(path("s.npy"))).find("'shape': ()"), std::string::npos);
  Result<HostTensor<double>> back = read_npy(path("s.npy"));
  KB_ASSERT_OK(back);
  EXPECT_TRUE(back->shape.empty());
  ASSERT_EQ(back->data.size(), 1u);
  EXPECT_EQ(back->data[0], 3.5);
}

TEST_F(NpyTest, OneDimensionalArrayUsesAOneTuple) {
  HostTensor<float> t = ramp_f32({5});
  KB_ASSERT_OK(write_npy(path("v.npy"), t));
  EXPECT_NE(header_of(bytes_of(path("v.npy"))).find("'shape': (5,)"), std::string::npos);
  Result<HostTensor<double>> back = read_npy(path("v.npy"));
  KB_ASSERT_OK(back);
  EXPECT_EQ(back->shape, (Shape{5}));
  EXPECT_EQ(back->data[4], 0.0);
}

TEST_F(NpyTest, HeaderIsNumpyVersionOneAndPaddedToSixtyFour) {
  for (const Shape& shape :
       {Shape{}, Shape{7}, Shape{1, 12345, 1, 3}, Shape{1, 2, 3, 4, 5, 6, 7, 8}}) {
    HostTensor<float> t(shape);
    KB_ASSERT_OK(write_npy(path("h.npy"), t));
    const std::string bytes = bytes_of(path("h.npy"));
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
    EXPECT_EQ(bytes[6], '\x01');
    EXPECT_EQ(bytes[7], '\x00');
    const std::string header = header_of(bytes);
    EXPECT_EQ((10 + header.size()) % 64, 0u) << shape_to_string(shape);
    EXPECT_EQ(header.back(), '\n');
    EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (", 0), 0u) << header;
    EXPECT_EQ(bytes.size(), 10 + header.size() + 4 * t.data.size());
  }
}

TEST_F(NpyTest, TruncatedDataFailsNamingTheFile) {
  KB_ASSERT_OK(write_npy(path("t.npy"), ramp_f32({4, 4})));
  fs::resize_file(path("t.npy"), fs::file_size(path("t.npy")) - 3);
  Result<HostTensor<double>> back = read_npy(path("t.npy"));
  ASSERT_FALSE(back.is_ok());
  EXPECT_EQ(back.status().message(), path("t.npy") + ": truncated data (expected 16 values)");
}

TEST_F(NpyTest, TruncatedHeaderFailsNamingTheFile) {
  KB_ASSERT_OK(write_npy(path("t.npy"), ramp_f32({4})));
  fs::resize_file(path("t.npy"), 40);
  Result<HostTensor<double>> back = read_npy(path("t.npy"));
  ASSERT_FALSE(back.is_ok());
  EXPECT_EQ(back.status().message(), path("t.npy") + ": truncated header");
}

TEST_F(NpyTest, WrongDtypeFailsNamingTheFile) {
  KB_ASSERT_OK(write_npy(path("i.npy"), ramp_f32({2})));
  std::string bytes = bytes_of(path("i.npy"));
  bytes.replace(bytes.find("<f4"), 3, "<i4");
  write_bytes(path("i.npy"), bytes);
  Result<HostTensor<double>> back = read_npy(path("i.npy"));
  ASSERT_FALSE(back.is_ok());
  EXPECT_EQ(back.status().message(), path("i.npy") + ": expected dtype <f4 or <f8");
}

TEST_F(NpyTest, FortranOrderIsRejected) {
  KB_ASSERT_OK(write_npy(path("f.npy"), ramp_f32({2, 2})));
  std::string bytes = bytes_of(path("f.npy"));
  bytes.replace(bytes.find("False"), 5, "True ");
  write_bytes(path("f.npy"), bytes);
  Result<HostTensor<double>> back = read_npy(path("f.npy"));
  ASSERT_FALSE(back.is_ok());
  EXPECT_EQ(back.status().message(), path("f.npy") + ": expected C order (fortran_order False)");
}

TEST_F(NpyTest, NotAnNpyFileOrNoFile) {
  write_bytes(path("x.npy"), "hello, this is not numpy");
  Result<HostTensor<double>> back = read_npy(path("x.npy"));
  ASSERT_FALSE(back.is_ok());
  EXPECT_EQ(back.status().message(), path("x.npy") + ": not an .npy file");

  back = read_npy(path("absent.npy"));
  ASSERT_FALSE(back.is_ok());
  EXPECT_EQ(back.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(back.status().message(), path("absent.npy") + ": cannot open");
}

TEST_F(NpyTest, WriteToAMissingDirectoryFails) {
  Status s = write_npy(path("no/such/dir/a.npy"), ramp_f32({1}));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), path("no/such/dir/a.npy") + ": cannot open for writing");
}

}  // namespace
}  // namespace kb
