// The CI gate end to end (`kb submit --wait --gate`, cli/ci_gate.h): a real kb-coordinator, a
// CPU kb-worker and PostgreSQL record a baseline run on main, then the gate judges two runs on a
// feature branch against it: one 4% slower (the paced packs of tests/paced_cpu_pack/, 250 vs
// 260 ms a call) fails at --max-slowdown 3%, an A/A run with the baseline's pack passes. The
// exit codes, the JUnit XML and the Markdown summary are checked.
//
// Needs KB_TEST_PG_URL (tools/test.sh starts a throwaway cluster); skips without it.
#include <gtest/gtest.h>

#include "tests/support/fleet_fixture.h"
#include "tests/support/read_text.h"

namespace kb::testing {
namespace {

using std::chrono::seconds;

// The paced packs (tests/paced_cpu_pack/): 250 and 260 ms per custom call.
std::string paced_pack_path() {
  return KB_TEST_PACED_PACK_PATH;
}
std::string paced_slow_pack_path() {
  return KB_TEST_PACED_SLOW_PACK_PATH;
}

// Two problems whose fp32 CPU models take microseconds at the small preset, far under the pace.
constexpr const char* kProblems = "L1_003,L1_098";

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The stack, its database and work directory: FleetFixture (KB_START_FLEET).
class GateTest : public FleetFixture {
 protected:
  // `kb submit kProblems --wait` on the CPU worker with `pack`, labelled commit/branch, plus
  // `extra`; the exit code, stdout in *output. A 4 s time cap gives ~16 samples per side at the
  // 250 ms pace (at 2 s, ~4: a Mann–Whitney p no lower than 0.03, too close to the gate's 0.05).
  int submit(const std::string& pack, const std::string& commit, const std::string& branch,
             const std::vector<std::string>& extra, std::string* output) {
    std::vector<std::string> args = {"submit",     kProblems,  "--preset", "small",    "--pack",
                                     pack,         "--commit", commit,     "--branch", branch,
                                     "--time-cap", "4",        "--trials", "3",        "--wait"};
    args.insert(args.end(), extra.begin(), extra.end());
    return stack_->kb(args, output, seconds(300));
  }
  std::vector<std::string> gate_flags(const std::string& name) {
    const std::string& work_dir = stack_->work_dir();
    return {"--gate",
            "--max-slowdown",
            "3%",
            "--summary-md",
            work_dir + "/" + name + ".md",
            "--junit",
            work_dir + "/" + name + ".xml"};
  }
};

TEST_F(GateTest, AFourPercentSlowdownFailsTheGateAndAnAaRunPassesIt) {
  KB_START_FLEET(stack);
  stack.add_worker("cpu-a", {"--device", "cpu"});
  const std::string& work_dir = stack.work_dir();

  std::string out;
  ASSERT_EQ(submit(paced_pack_path(), "aaaa000000000000000000000000000000000001", "main", {}, &out),
            0)
      << out;

  // 4% slower than the baseline: exit 1, both problems fail as slowdowns.
  const int slow = submit(paced_slow_pack_path(), "bbbb000000000000000000000000000000000002",
                          "feature", gate_flags("slow"), &out);
  std::cerr << out;
  EXPECT_EQ(slow, 1) << out;
  const std::string slow_xml = ::kb::test::read_text(work_dir + "/slow.xml");
  EXPECT_EQ(count_of(slow_xml, "<testcase "), 2u) << slow_xml;
  EXPECT_EQ(count_of(slow_xml, "<failure type=\"slowdown\""), 2u) << slow_xml;
  EXPECT_NE(slow_xml.find("<property name=\"change\" value=\"0.0"), std::string::npos) << slow_xml;
  const std::string slow_md = ::kb::test::read_text(work_dir + "/slow.md");
  EXPECT_EQ(slow_md.rfind("## kbfleet gate: FAILED", 0), 0u) << slow_md;
  EXPECT_NE(slow_md.find("the last small run on branch main"), std::string::npos) << slow_md;
  EXPECT_EQ(count_of(slow_md, "slower than the baseline by +"), 2u) << slow_md;

  // A/A: the baseline's pack again on the branch: exit 0, no failure.
  const int same = submit(paced_pack_path(), "cccc000000000000000000000000000000000003", "feature",
                          gate_flags("aa"), &out);
  std::cerr << out;
  EXPECT_EQ(same, 0) << out;
  const std::string aa_xml = ::kb::test::read_text(work_dir + "/aa.xml");
  EXPECT_EQ(count_of(aa_xml, "<testcase "), 2u) << aa_xml;
  EXPECT_EQ(count_of(aa_xml, "<failure"), 0u) << aa_xml;
  EXPECT_EQ(::kb::test::read_text(work_dir + "/aa.md").rfind("## kbfleet gate: passed", 0), 0u);
}

}  // namespace
}  // namespace kb::testing
