// The CRC-32 trailer of xtrain's binary snapshot files.
//
// After the serialized message, xtrain writes one more field, file_crc32
// (number 1999, fixed32), holding the zlib CRC-32 of every byte before it.
// The result is still a valid message of the same type, so Caffe 1.0 reads
// it (it skips the unknown field), and a reader that knows the trailer can
// tell a complete file from a truncated or damaged one without trusting the
// parser, which accepts many truncations as valid shorter messages.
#pragma once

#include <google/protobuf/message.h>

#include <cstdint>
#include <string>

namespace xtrain {

enum class ChecksumStatus { kAbsent, kValid, kMismatch };

// The message's bytes followed by the trailer. Throws xtrain::Error if the
// message cannot be serialized (over protobuf's 2 GB limit).
std::string serialize_with_checksum(const google::protobuf::Message& message,
                                    const std::string& path_for_errors);
// Whether `bytes` end in a trailer, and if so whether it matches.
ChecksumStatus check_checksum_trailer(const std::string& bytes);

struct FileDigest {
  std::uint64_t size = 0;
  std::uint32_t crc32 = 0;
};
// Size and CRC-32 of a file's bytes, read in chunks. Throws xtrain::Error if
// the file cannot be read.
FileDigest digest_file(const std::string& path);
std::uint32_t crc32_of(const std::string& bytes);

}  // namespace xtrain
