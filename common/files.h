// Whole-file reads, the one way kbfleet reads a file into memory (specs, packs, migrations,
// spooled results). Binary-safe.
//
// Thread safety: independent calls, safe from several threads.
#pragma once

#include <filesystem>
#include <string>

#include "common/status.h"

namespace kb {

// The bytes of `path`. not_found when it cannot be opened (the message names the file and the
// system's reason), io_error when a read fails part way.
Result<std::string> read_file(const std::filesystem::path& path);

}  // namespace kb
