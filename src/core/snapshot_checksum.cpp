#include "core/snapshot_checksum.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"

namespace xtrain {
namespace {

// The key of field 1999 with wire type 5 (fixed32), as a varint:
// (1999 << 3) | 5 = 15997 = 0xFD 0x7C.
constexpr unsigned char kTrailerKey[2] = {0xFD, 0x7C};
constexpr std::size_t kTrailerSize = sizeof(kTrailerKey) + 4;

std::uint32_t crc32_of(const char* data, std::size_t size) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed files over 4 GB in pieces.
  while (size > 0) {
    const uInt piece = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(data), piece);
    data += piece;
    size -= piece;
  }
  return static_cast<std::uint32_t>(crc);
}

}  // namespace

std::uint32_t crc32_of(const std::string& bytes) { return crc32_of(bytes.data(), bytes.size()); }

std::string serialize_with_checksum(const google::protobuf::Message& message,
                                    const std::string& path_for_errors) {
  std::string bytes;
  XTRAIN_CHECK(message.SerializeToString(&bytes), "cannot serialise the ",
               message.GetDescriptor()->name(), " for '", path_for_errors,
               "' (over protobuf's 2 GB message limit? use snapshot_format: HDF5)");
  const std::uint32_t crc = crc32_of(bytes);
  bytes.append(reinterpret_cast<const char*>(kTrailerKey), sizeof(kTrailerKey));
  for (int shift = 0; shift < 32; shift += 8) {  // fixed32 is little-endian
    bytes.push_back(static_cast<char>((crc >> shift) & 0xFF));
  }
  return bytes;
}

ChecksumStatus check_checksum_trailer(const std::string& bytes) {
  if (bytes.size() < kTrailerSize) return ChecksumStatus::kAbsent;
  const std::size_t body = bytes.size() - kTrailerSize;
  if (std::memcmp(bytes.data() + body, kTrailerKey, sizeof(kTrailerKey)) != 0) {
    return ChecksumStatus::kAbsent;
  }
  std::uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) {
    stored |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[body + 2 + i]))
              << (8 * i);
  }
  return crc32_of(bytes.data(), body) == stored ? ChecksumStatus::kValid
                                                : ChecksumStatus::kMismatch;
}

FileDigest digest_file(const std::string& path) {
  std::ifstream in = open_input_file(path, "", /*binary=*/true);
  FileDigest digest;
  uLong crc = ::crc32(0L, Z_NULL, 0);
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(got));
    digest.size += static_cast<std::uint64_t>(got);
  }
  XTRAIN_CHECK(in.eof(), "cannot read '", path, "': ", std::strerror(errno));
  digest.crc32 = static_cast<std::uint32_t>(crc);
  return digest;
}

}  // namespace xtrain
