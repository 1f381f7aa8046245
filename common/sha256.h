// SHA-256 (FIPS 180-4) of a byte string, as 64 lowercase hex characters. Kernel packs are stored
// and served by this content hash (schemas/0001_initial.sql, packs.hash), and every executor
// re-hashes both packs before loading them: OpenSSL's libcrypto (Debian libssl3, with the CPU's
// SHA extensions) does 12 MB in ~8 ms where a portable implementation took ~60 ms per job.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace kb {

std::string sha256_hex(std::string_view bytes);

}  // namespace kb
