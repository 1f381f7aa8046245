// The kernel packs through their C ABI, as a worker sees them: the hash check before dlopen,
// version, problem table, the split between the reference pack (golden, reference) and a
// candidate pack (custom, cpu_fp32), and a CPU variant created and run from a spec document.
#include "executor/kernel_pack.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/install_paths.h"
#include "common/sha256.h"

#include "common/spec_loader.h"
#include "common/tensor_generator.h"
#include "kernels/cpu_model.h"
#include "tests/support/assert_ok.h"

namespace kb {
namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The reference pack, loaded only with its pin (libkbref.so.sha256, written at build time).
const KernelPack& pack() {
  static const KernelPack* kPack = [] {
    Result<std::string> pin = read_pack_pin(KB_REF_PACK_PATH);
    KB_EXPECT_OK(pin);
    Result<KernelPack> p = KernelPack::open(KB_REF_PACK_PATH, pin.is_ok() ? pin.value() : "");
    KB_EXPECT_OK(p);
    return p.is_ok() ? new KernelPack(std::move(p).value()) : nullptr;
  }();
  return *kPack;
}

const KernelPack& candidate() {
  static const KernelPack* kPack = [] {
    Result<KernelPack> p = KernelPack::open(KB_PACK_PATH);
    KB_EXPECT_OK(p);
    return p.is_ok() ? new KernelPack(std::move(p).value()) : nullptr;
  }();
  return *kPack;
}

TEST(KernelPack, RefusesBytesThatDoNotHashToTheExpectedSha256BeforeLoading) {
  const std::filesystem::path copy =
      std::filesystem::temp_directory_path() / "kb-tampered-pack-test.so";
  std::string bytes = file_bytes(KB_PACK_PATH);
  const std::string honest_hash = sha256_hex(bytes);
  bytes[bytes.size() / 2] ^= 0x01;  // changed after the hash was taken, as a tampered cache file
  std::ofstream(copy, std::ios::binary) << bytes;
  Result<KernelPack> p = KernelPack::open(copy.string(), honest_hash);
  std::filesystem::remove(copy);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(p.status().message().find("refused, not loaded"), std::string::npos)
      << p.status().message();
}

TEST(KernelPack, LoadsWithTheRightHashAndRecordsIt) {
  const std::string hash = sha256_hex(file_bytes(KB_PACK_PATH));
  Result<KernelPack> p = KernelPack::open(KB_PACK_PATH, hash);
  KB_ASSERT_OK(p);
  EXPECT_EQ(p->sha256(), hash);
}

TEST(KernelPack, TheReferencePackMatchesItsPin) {
  EXPECT_EQ(pack().sha256(), read_pack_pin(KB_REF_PACK_PATH).value());
}

// Two instances: the reference pack and a candidate are separate libraries, and each answers
// only for its own slot, so a candidate can never stand in for the reference.
TEST(KernelPack, ReferenceAndCandidatePacksEachOfferOnlyTheirOwnSlots) {
  EXPECT_NE(&pack().table(), &candidate().table());
  for (const char* id : {"L1_003", "L2_093"}) {
    EXPECT_EQ(pack().table().has_variant(id, KB_VARIANT_CPU_GOLDEN), 1) << id;
    EXPECT_EQ(pack().table().has_variant(id, KB_VARIANT_CPU_FP32), 0) << id;
    EXPECT_EQ(pack().table().has_variant(id, KB_VARIANT_CUSTOM), 0) << id;
    EXPECT_EQ(candidate().table().has_variant(id, KB_VARIANT_CPU_FP32), 1) << id;
    EXPECT_EQ(candidate().table().has_variant(id, KB_VARIANT_CPU_GOLDEN), 0) << id;
    EXPECT_EQ(candidate().table().has_variant(id, KB_VARIANT_REFERENCE), 0) << id;
  }
  kb_instance_v1* inst = nullptr;
  char error[256] = "";
  EXPECT_EQ(candidate().table().create("id: L1_003\n", "x.yaml", nullptr, 0, KB_VARIANT_CPU_GOLDEN,
                                       nullptr, &inst, error, sizeof error),
            KB_PACK_NOT_IMPLEMENTED);
  EXPECT_EQ(inst, nullptr);
  EXPECT_NE(std::string(error).find("only custom variants"), std::string::npos) << error;
}

// A candidate pack that stays loaded after its KernelPack is gone (it asked for RTLD_NODELETE, or
// holds GNU unique symbols, as a sanitizer build's packs do) keeps the name it was loaded under,
// /proc/self/fd/N. The next pack's memfd gets the lowest free number, that same N: were it
// dlopen()ed under that name, glibc would hand back the candidate, and the "reference" would be
// the candidate. (Found by the unit tests under -fsanitize=address,undefined, session 28.)
TEST(KernelPack, ALibraryLeftLoadedNeverStandsInForTheNextPack) {
  const void* candidate_table = nullptr;
  {
    Result<KernelPack> leftover = KernelPack::open(KB_PACK_PATH);
    KB_ASSERT_OK(leftover);
    candidate_table = &leftover.value().table();
    Dl_info where{};
    ASSERT_NE(dladdr(candidate_table, &where), 0);
    ASSERT_EQ(std::string(where.dli_fname).rfind("/proc/self/fd/", 0), 0u) << where.dli_fname;
    // What a pack can do to itself: no dlclose() will unload it now.
    void* pinned = dlopen(where.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    ASSERT_NE(pinned, nullptr) << dlerror();
    dlclose(pinned);
  }  // its memfd is closed here; the library stays mapped under the old name
  Result<std::string> pin = read_pack_pin(KB_REF_PACK_PATH);
  KB_ASSERT_OK(pin);
  Result<KernelPack> reference = KernelPack::open(KB_REF_PACK_PATH, pin.value());
  KB_ASSERT_OK(reference);
  EXPECT_NE(&reference.value().table(), candidate_table);
  EXPECT_EQ(reference.value().table().has_variant("L1_003", KB_VARIANT_CPU_GOLDEN), 1);
  EXPECT_EQ(reference.value().table().has_variant("L1_003", KB_VARIANT_CPU_FP32), 0);
}

TEST(KernelPack, RefusesAFileThatIsNotAPack) {
  Result<KernelPack> p = KernelPack::open("/nonexistent/libnothing.so");
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("cannot load kernel pack /nonexistent/libnothing.so"),
            std::string::npos);
}

// The commit a pack reports is the one it was built from (kernels/write_commit.cmake runs at
// every build), so every job's environment names the code that ran. The test builds and runs at
// one commit, so it checks the format and the match, not staleness across commits.
TEST(KernelPack, ReportsTheCommitItWasBuiltFrom) {
  std::string head;
  if (FILE* git = popen("git -C '" KB_SOURCE_DIR "' rev-parse --short=12 HEAD 2>/dev/null", "r")) {
    char line[64] = {};
    if (fgets(line, sizeof line, git) != nullptr) head = line;
    if (pclose(git) != 0) head.clear();
  }
  if (!head.empty() && head.back() == '\n') head.pop_back();
  if (head.size() != 12) GTEST_SKIP() << "not a git checkout here";
  const std::string commit = pack().table().commit;
  EXPECT_TRUE(commit == head || commit == head + "-dirty") << commit << " against HEAD " << head;
}

TEST(KernelPack, TableListsEveryProblemWithItsGoldenModel) {
  const kb_pack_v1_t& t = pack().table();
  EXPECT_EQ(t.abi_version, KB_PACK_ABI_VERSION);
  EXPECT_STRNE(t.commit, "");
  // One entry per spec in problems/ (both suites), in id order.
  const Result<ProblemCatalog> catalog = load_problem_catalog(default_problems_dir());
  KB_ASSERT_OK(catalog);
  const auto count = static_cast<int32_t>(catalog->problems.size());
  ASSERT_EQ(t.problem_count(), count);
  for (int32_t i = 0; i < t.problem_count(); ++i) {
    EXPECT_EQ(t.has_variant(t.problem_id(i), KB_VARIANT_CPU_GOLDEN), 1) << t.problem_id(i);
    if (i > 0) {
      EXPECT_LT(std::string(t.problem_id(i - 1)), std::string(t.problem_id(i)));
    }
  }
  EXPECT_EQ(t.problem_id(count), nullptr);
  EXPECT_EQ(t.has_variant("L9_999", KB_VARIANT_CPU_GOLDEN), 0);
}

TEST(KernelPack, CreateReportsAnInvalidSpec) {
  kb_instance_v1* inst = nullptr;
  char error[512] = "";
  int32_t code = pack().table().create("id: L1_003\n", "bad.yaml", nullptr, 0,
                                       KB_VARIANT_CPU_GOLDEN, nullptr, &inst, error, sizeof error);
  EXPECT_EQ(code, KB_PACK_ERROR);
  EXPECT_EQ(inst, nullptr);
  EXPECT_NE(std::string(error).find("bad.yaml: graph: missing"), std::string::npos) << error;
}

TEST(KernelPack, CpuGoldenThroughTheAbiMatchesTheLinkedGoldenModel) {
  auto spec = load_problem_catalog(default_problems_dir()).value().problems.at("L1_003");
  ProblemInstance p = ProblemInstance::create(spec, "odd").value();
  std::stringstream yaml;
  yaml << std::ifstream(spec->file).rdbuf();
  std::vector<kb_dim_v1> dims;
  for (const auto& [name, value] : p.dims()) dims.push_back({name.c_str(), value});
  kb_instance_v1* inst = nullptr;
  char error[512] = "";
  ASSERT_EQ(pack().table().create(yaml.str().c_str(), spec->file.c_str(), dims.data(),
                                  static_cast<int32_t>(dims.size()), KB_VARIANT_CPU_GOLDEN, nullptr,
                                  &inst, error, sizeof error),
            KB_PACK_OK)
      << error;
  TensorSet tensors = generate_tensors(p, GeneratorKey{5, 1});
  auto view = [](const HostTensor<float>& t) {
    kb_tensor_v1 v{const_cast<float*>(t.data.data()), static_cast<int32_t>(t.shape.size()), {}};
    for (size_t d = 0; d < t.shape.size(); ++d) v.shape[d] = t.shape[d];
    return v;
  };
  kb_tensor_v1 inputs[2] = {view(tensors.get("A")), view(tensors.get("B"))};
  HostTensor<float> out(p.output_shape());
  kb_tensor_v1 out_view = view(out);
  ASSERT_EQ(
      pack().table().run(inst, inputs, 2, nullptr, 0, &out_view, nullptr, error, sizeof error),
      KB_PACK_OK)
      << error;
  pack().table().destroy(inst);
  HostTensor<double> golden = find_cpu_model("L1_003")->golden(p, tensors);
  for (size_t i = 0; i < golden.data.size(); ++i)
    EXPECT_EQ(out.data[i], static_cast<float>(golden.data[i])) << i;
}

}  // namespace
}  // namespace kb
