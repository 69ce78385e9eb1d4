// Reading and writing protobuf files: prototxt text and binary messages.
//
// Text parsing reports errors as "file:line:column: message". Binary writes
// go to a temporary file in the same directory that is fsync'd and renamed,
// so a crash never leaves a half-written file under the final name.
#pragma once

#include <google/protobuf/message.h>

#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

class NetParameter;
class SolverParameter;

// Throws xtrain::Error (file:line:column) on unknown fields or bad syntax.
XTRAIN_API void read_proto_from_text_file(const std::string& path,
                                          google::protobuf::Message* message);
XTRAIN_API void read_proto_from_text_string(const std::string& text,
                                            google::protobuf::Message* message,
                                            const std::string& source_name = "<string>");
// Throws xtrain::Error naming the file if it is missing or not a valid message.
XTRAIN_API void read_proto_from_binary_file(const std::string& path,
                                            google::protobuf::Message* message);
// Atomic (temp file + fsync + rename); throws xtrain::Error on failure.
XTRAIN_API void write_proto_to_binary_file(const google::protobuf::Message& message,
                                           const std::string& path);
XTRAIN_API void write_proto_to_text_file(const google::protobuf::Message& message,
                                         const std::string& path);

// The message's bytes for a database record (a Datum, an AnnotatedDatum).
// Protobuf cannot serialise a message over 2 GB (SerializeAsString then
// returns bytes that are no record, without an error): throws
// xtrain::Error "<what>: a record of N bytes is more than ... ; <remedy>".
XTRAIN_API std::string serialize_record(const google::protobuf::Message& message,
                                        const std::string& what, const std::string& remedy);

// A net or solver from a prototxt, with the checks a user's file needs.
XTRAIN_API NetParameter read_net_params_from_text_file(const std::string& path);
XTRAIN_API SolverParameter read_solver_params_from_text_file(const std::string& path);
// The same for prototxt text already in memory; `source` names it in errors.
// (The solver's net paths are left as written: there is no file to resolve
// them against.)
XTRAIN_API NetParameter read_net_params_from_text(const std::string& text,
                                                  const std::string& source);
XTRAIN_API SolverParameter read_solver_params_from_text(const std::string& text,
                                                        const std::string& source);

}  // namespace xtrain
