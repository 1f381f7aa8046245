// The kernel pack a run uses (kernels/pack_abi.h): where it is by default and its content hash,
// which names it everywhere (the coordinator's packs table, JOB.pack, the workers' caches).
//
// default_pack_path(): $KB_PACK_PATH, else libkbpack.so beside the running binary, in ../kernels
// (a build tree) or ../lib (a bundle); "" when none exists.
//
// Thread safety: pure functions (they read the file system and the environment).
#pragma once

#include <string>

#include "common/status.h"

namespace kb::cli {

struct PackFile {
  std::string path;
  std::string bytes;
  std::string sha256;  // lowercase hex of the bytes
};

std::string default_pack_path();
Result<PackFile> read_pack_file(const std::string& path);  // kNotFound when it is not a file

}  // namespace kb::cli
