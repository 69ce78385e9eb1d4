// Checks the B-tree of an LMDB snapshot before LMDB walks it.
//
// LMDB trusts its pages: a damaged page number sends a cursor outside the
// file (SIGBUS) or the memory map (SIGSEGV), a damaged node flag into a null
// pointer, a branch page with one key into an assertion (abort). None of
// these can be caught once they happen without ending the process
// (LmdbFaultGuard only turns them into one line). So when a database is
// opened for reading, its main tree is walked here first with ordinary reads
// of data.mdb (no memory map): every page a forward walk of the records
// visits (branch and leaf pages, and the byte range of every overflow
// record) is checked to lie inside both the file and the memory map, to have
// the type its depth requires and a consistent header, and every node to lie
// inside its page. The counts found must equal those the meta page claims
// (the record count is what an epoch is made of). A tree that passes cannot
// send LMDB's FIRST/NEXT walk outside the file.
//
// The format facts (LMDB 0.9, 64-bit, little-endian; the same in every LMDB
// Caffe's tools wrote): pages of `page_size` bytes, a 16-byte page header
// (page number, flags, lower and upper bounds of the free space, or the page
// count of an overflow run), 2-byte node offsets after it, nodes of an
// 8-byte header (data size or child page number, flags, key size) followed
// by the key and the data (or the first overflow page's number).
//
// Cost: one read of every branch and leaf page (overflow records are not
// read, only their range checked): for the Fashion-MNIST training LMDB
// about 15,000 pages from the page cache, a few tens of milliseconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xtrain {

// Where the snapshot LMDB will read lives, as the opened environment sees it.
struct LmdbSnapshotPlace {
  std::size_t page_size = 0;  // the environment's page size (mdb_env_stat)
  std::size_t map_size = 0;   // bytes mapped (mdb_env_info)
  std::uint64_t txn_id = 0;   // the read transaction's id (mdb_txn_id)
  // With a lock file LMDB reads the meta page of the id's parity; without
  // one (MDB_NOLOCK), the one with the larger transaction id.
  bool uses_lock_file = true;
};

// What the walk found (equal to the meta page's counts when it returns).
struct LmdbTreeCounts {
  std::uint64_t entries = 0;
  std::uint64_t branch_pages = 0;
  std::uint64_t leaf_pages = 0;
  std::uint64_t overflow_pages = 0;
  unsigned depth = 0;
};

// Before LMDB opens `database_path`: the meta pages' page size (LMDB
// divides by it), and the memory map they ask for (it must hold both meta
// pages, which LMDB reads through it). Throws xtrain::Error naming the
// database if they are damaged; a file LMDB itself refuses (no LMDB magic,
// another format version) is left to LMDB's error.
void check_lmdb_meta_pages(const std::string& database_path);

// Walks the main tree of `database_path`/data.mdb. Throws xtrain::Error
// naming the database, the page and what is wrong ("the database is
// damaged: rebuild it ...") if LMDB could leave the file or the map, or hit
// a node it would misread, while walking the records in order.
LmdbTreeCounts check_lmdb_tree(const std::string& database_path, const LmdbSnapshotPlace& place);

}  // namespace xtrain
