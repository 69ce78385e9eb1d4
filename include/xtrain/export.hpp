// XTRAIN_API: what libxtrain exports.
//
// The library is compiled with -fvisibility=hidden and
// -fvisibility-inlines-hidden, so only what the public headers mark with
// XTRAIN_API -- their classes (with their members, vtables and type_info, so
// that a program can subclass Layer or catch xtrain::Error) and their free
// functions -- is in libxtrain.so's dynamic symbol table; everything in src/
// stays internal to the library and cannot clash with an application's own
// symbols. (The protobuf messages of xtrain/proto/xtrain.pb.h are all
// exported too: that file is compiled with default visibility.)
//
// The same attribute serves building and using the library: ELF needs no
// import/export distinction.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define XTRAIN_API __attribute__((visibility("default")))
#else
#define XTRAIN_API
#endif
