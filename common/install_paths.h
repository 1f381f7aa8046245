// Where an installation keeps the programs and files its parts find one another by: the
// kb-executor program and the trusted reference pack with its pin. A build tree, a bundle
// (deploy/make-bundle.sh) and a package install are all searched relative to the running program
// (/proc/self/exe), so none needs configuring.
//
// Thread safety: independent calls, safe from several threads.
#pragma once

#include <string>

#include "common/status.h"

namespace kb {

// kb-executor beside the running program, else in ../executor (a build tree); "kb-executor" (the
// PATH) when neither exists.
std::string default_executor_path();

// The reference pack of this installation: $KB_REFERENCE_PACK, else libkbref.so beside the
// running program, in ../kernels (a build tree) or ../lib (a bundle); "" when none exists.
std::string default_reference_pack_path();

// The trusted reference pack's pin: the sha256 recorded beside it at build or install time
// (`PATH.sha256`, kernels/write_sha256.cmake). not_found when there is none, invalid_argument
// when the file holds no sha256.
Result<std::string> read_pack_pin(const std::string& pack_path);

}  // namespace kb
