#include "core/truncated_message.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace xtrain {

bool looks_cut_short(const std::string& bytes, const google::protobuf::Descriptor& type) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  int whole_fields = 0;
  while (true) {
    const std::uint32_t tag = input.ReadTag();
    if (tag == 0) return false;  // the end (or garbage): whole, not cut
    const int number = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    const google::protobuf::FieldDescriptor* field = type.FindFieldByNumber(number);
    if (field == nullptr) return false;  // not this kind of message
    const auto wire_type = WireFormatLite::GetTagWireType(tag);
    if (wire_type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      std::uint32_t length = 0;
      if (!input.ReadVarint32(&length)) return whole_fields > 0;
      if (input.BytesUntilLimit() >= 0 && static_cast<int>(length) > input.BytesUntilLimit()) {
        return whole_fields > 0;
      }
      const int remaining = static_cast<int>(bytes.size()) - input.CurrentPosition();
      if (static_cast<int>(length) > remaining) return whole_fields > 0;
      if (!input.Skip(static_cast<int>(length))) return whole_fields > 0;
    } else if (!WireFormatLite::SkipField(&input, tag)) {
      return whole_fields > 0;
    }
    ++whole_fields;
  }
}

}  // namespace xtrain
