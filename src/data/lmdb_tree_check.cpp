#include "data/lmdb_tree_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// Page layout (see the header). Offsets in bytes from the page's start.
constexpr std::size_t kPageHeaderSize = 16;
constexpr std::size_t kFlagsAt = 10, kLowerAt = 12, kUpperAt = 14;
constexpr std::uint16_t kBranchPage = 0x01, kLeafPage = 0x02;
// Flags that only live in memory or mark page kinds a reader never needs in
// a plain database (overflow and meta pages are never tree nodes).
constexpr std::uint16_t kInMemoryFlags = 0x10 | 0x4000 | 0x8000;  // dirty, loose, keep
// The meta page: the database record of the main tree, the last page.
constexpr std::size_t kMetaAt = kPageHeaderSize;
constexpr std::uint16_t kMetaPage = 0x08;
constexpr std::uint32_t kLmdbMagic = 0xBEEFC0DE, kLmdbFormat = 1;
constexpr std::size_t kMagicAt = kMetaAt, kFormatAt = kMetaAt + 4, kMapSizeAt = kMetaAt + 16;
constexpr std::size_t kPageSizeAt = kMetaAt + 24;  // kept in the free tree's record
constexpr std::size_t kMainTreeAt = kMetaAt + 72;  // after magic..mapsize and the free tree
constexpr std::size_t kLastPageAt = kMetaAt + 120, kTxnIdAt = kMetaAt + 128;
constexpr std::size_t kMetaEnd = kMetaAt + 136;
// A node: data size (or child page) in the first 4 bytes, flags, key size.
constexpr std::size_t kNodeHeaderSize = 8;
// Besides big data: 0x02 a sub-database, 0x04 duplicates (never in our files).
constexpr std::uint16_t kBigData = 0x01;
// Main-tree flags of databases with duplicate keys (sorted/fixed/integer/
// reversed duplicates): LMDB would read their leaves as sub-trees.
constexpr std::uint16_t kDuplicateTreeFlags = 0x04 | 0x10 | 0x20 | 0x40;
constexpr std::uint64_t kNoRootPage = ~std::uint64_t{0};
constexpr unsigned kLmdbCursorStack = 32;  // LMDB's deepest cursor
constexpr std::size_t kLargestKey = 511;   // MDB_MAXKEYSIZE

template <typename T>
T read_at(const unsigned char* bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes + at, sizeof(T));
  return value;
}

// LMDB keeps offsets inside a page in 16 bits and divides by the page size.
bool is_lmdb_page_size(std::uint64_t size) {
  return size >= 512 && size <= 32768 && (size & (size - 1)) == 0;
}

struct MainTree {
  std::uint16_t flags = 0;
  std::uint16_t depth = 0;
  LmdbTreeCounts counts;
  std::uint64_t root = 0;
  std::uint64_t last_page = 0;
};

class TreeWalk {
 public:
  TreeWalk(const std::string& database_path, const LmdbSnapshotPlace& place)
      : database_(database_path), page_size_(place.page_size) {
    const std::string file = database_path + "/data.mdb";
    fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat info {};
    if (fd_ < 0 || ::fstat(fd_, &info) != 0) {
      throw Error("cannot read LMDB '" + database_path + "': " + file + ": " +
                  std::strerror(errno));
    }
    file_size_ = static_cast<std::uint64_t>(info.st_size);
    if (!is_lmdb_page_size(page_size_)) {
      fail(detail::concat("the page size is ", page_size_, " bytes"));
    }
    // Bytes LMDB can reach without a fault: inside the file and the map.
    readable_ = std::min<std::uint64_t>(file_size_, place.map_size);
    page_.resize(page_size_);
  }
  ~TreeWalk() {
    if (fd_ >= 0) ::close(fd_);
  }
  TreeWalk(const TreeWalk&) = delete;
  TreeWalk& operator=(const TreeWalk&) = delete;

  MainTree read_meta(const LmdbSnapshotPlace& place) {
    int meta_page = static_cast<int>(place.txn_id & 1);
    if (!place.uses_lock_file) {
      // LMDB's pick: page 1 only if its transaction id is the larger.
      meta_page = txn_id_of_meta(0) < txn_id_of_meta(1) ? 1 : 0;
    }
    read_page(static_cast<std::uint64_t>(meta_page), "the meta page");
    const unsigned char* bytes = page_.data();
    MainTree tree;
    tree.flags = read_at<std::uint16_t>(bytes, kMainTreeAt + 4);
    tree.depth = read_at<std::uint16_t>(bytes, kMainTreeAt + 6);
    tree.counts.branch_pages = read_at<std::uint64_t>(bytes, kMainTreeAt + 8);
    tree.counts.leaf_pages = read_at<std::uint64_t>(bytes, kMainTreeAt + 16);
    tree.counts.overflow_pages = read_at<std::uint64_t>(bytes, kMainTreeAt + 24);
    tree.counts.entries = read_at<std::uint64_t>(bytes, kMainTreeAt + 32);
    tree.root = read_at<std::uint64_t>(bytes, kMainTreeAt + 40);
    tree.last_page = read_at<std::uint64_t>(bytes, kLastPageAt);
    tree.counts.depth = tree.depth;
    last_page_ = tree.last_page;
    return tree;
  }

  // Walks the tree from `root`; returns what it found.
  LmdbTreeCounts walk(const MainTree& tree) {
    if ((tree.flags & kDuplicateTreeFlags) != 0) {
      fail(detail::concat("the main database has flags 0x", to_hex(tree.flags),
                          " (duplicate keys), which no Caffe or xtrain tool writes"));
    }
    LmdbTreeCounts found;
    if (tree.root == kNoRootPage) {
      if (tree.counts.entries != 0 || tree.depth != 0) {
        fail(detail::concat("the meta page claims ", tree.counts.entries,
                            " records but the tree has no root page"));
      }
      return found;
    }
    if (tree.depth == 0 || tree.depth > kLmdbCursorStack) {
      fail(detail::concat("the meta page claims a tree ", tree.depth, " levels deep"));
    }
    depth_ = tree.depth;
    visit(tree.root, 1, &found);
    found.depth = tree.depth;
    return found;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("LMDB '" + database_ + "' is damaged: " + what +
                "; rebuild the database (convert_imageset, convert_mnist_data)");
  }

 private:
  static std::string to_hex(unsigned value) {
    char text[16];
    std::snprintf(text, sizeof(text), "%x", value);
    return text;
  }

  std::uint64_t txn_id_of_meta(std::uint64_t meta_page) {
    read_page(meta_page, "the meta page");
    return read_at<std::uint64_t>(page_.data(), kTxnIdAt);
  }

  // Reads page `number` into page_ (only its first kMetaEnd bytes may be
  // past the readable end for a meta page: LMDB reads just those).
  void read_page(std::uint64_t number, const char* what) {
    const bool meta = number < 2;
    const std::uint64_t needed = meta ? kMetaEnd : page_size_;
    if (readable_ < needed || number > (readable_ - needed) / page_size_) {
      fail(detail::concat(what, " (page ", number, ") lies past the end of the ",
                          file_size_ <= readable_ ? "file" : "memory map", " (",
                          readable_ / page_size_, " pages)"));
    }
    std::memset(page_.data(), 0, page_.size());
    const off_t at = static_cast<off_t>(number * page_size_);
    const ssize_t got = ::pread(fd_, page_.data(), needed, at);
    if (got != static_cast<ssize_t>(needed)) {
      if (got < 0) {
        throw Error(detail::concat("cannot read LMDB '", database_, "': page ", number, ": ",
                                   std::strerror(errno)));
      }
      fail(detail::concat("page ", number, " is cut off: the file ended"));
    }
  }

  void visit(std::uint64_t number, unsigned level, LmdbTreeCounts* found) {
    const bool leaf_level = level == depth_;
    const char* kind = leaf_level ? "leaf" : "branch";
    if (number < 2 || number > last_page_) {
      fail(detail::concat("a ", kind, " page number at depth ", level, " is ", number,
                          ", outside pages 2..", last_page_));
    }
    if (!visited_.insert(number).second) {
      fail(detail::concat("page ", number, " is reached twice in the tree"));
    }
    read_page(number, leaf_level ? "a leaf page" : "a branch page");
    // Copied: visiting a child overwrites page_.
    const std::vector<unsigned char> page(page_);
    const unsigned char* bytes = page.data();
    auto where = [&] { return detail::concat(kind, " page ", number, " (depth ", level, "): "); };

    const std::uint16_t flags = read_at<std::uint16_t>(bytes, kFlagsAt) & ~kInMemoryFlags;
    const std::uint16_t expected = leaf_level ? kLeafPage : kBranchPage;
    if (flags != expected) {
      fail(where() + detail::concat("its flags are 0x", to_hex(flags), ", not those of a ",
                                    kind, " page (0x", to_hex(expected), ")"));
    }
    if (read_at<std::uint64_t>(bytes, 0) != number) {
      fail(where() + detail::concat("it calls itself page ", read_at<std::uint64_t>(bytes, 0)));
    }
    const std::size_t lower = read_at<std::uint16_t>(bytes, kLowerAt);
    const std::size_t upper = read_at<std::uint16_t>(bytes, kUpperAt);
    if (lower < kPageHeaderSize || (lower - kPageHeaderSize) % 2 != 0 || upper < lower ||
        upper > page_size_) {
      fail(where() + detail::concat("its free space runs from byte ", lower, " to ", upper));
    }
    const std::size_t keys = (lower - kPageHeaderSize) / 2;
    // LMDB asserts a branch page has two children, and reads a leaf's first
    // node without looking.
    if (keys < (leaf_level ? 1u : 2u)) {
      fail(where() + detail::concat("it has ", keys, " node(s)"));
    }
    if (leaf_level) {
      ++found->leaf_pages;
    } else {
      ++found->branch_pages;
    }

    for (std::size_t k = 0; k < keys; ++k) {
      const std::size_t at = read_at<std::uint16_t>(bytes, kPageHeaderSize + 2 * k);
      if (at < upper || at % 2 != 0 || at + kNodeHeaderSize > page_size_) {
        fail(where() + detail::concat("node ", k, " starts at byte ", at,
                                      ", outside the page's nodes (", upper, "..", page_size_,
                                      ")"));
      }
      const std::uint32_t low = read_at<std::uint32_t>(bytes, at);  // size or child (low bits)
      const std::uint16_t node_flags = read_at<std::uint16_t>(bytes, at + 4);
      const std::size_t key_size = read_at<std::uint16_t>(bytes, at + 6);
      const std::size_t key_end = at + kNodeHeaderSize + key_size;
      if (key_size > kLargestKey || key_end > page_size_) {
        fail(where() + detail::concat("node ", k, " has a ", key_size, "-byte key"));
      }
      if (!leaf_level) {
        // The child page number: 32 low bits, then the flags field's 16.
        const std::uint64_t child = low | (std::uint64_t{node_flags} << 32);
        visit(child, level + 1, found);
        continue;
      }
      ++found->entries;
      if ((node_flags & ~kBigData) != 0) {
        fail(where() + detail::concat("record ", k, " has node flags 0x", to_hex(node_flags),
                                      " (sub-database or duplicates), which no Caffe or "
                                      "xtrain tool writes"));
      }
      const std::uint64_t value_size = low;
      if ((node_flags & kBigData) == 0) {
        if (key_end + value_size > page_size_) {
          fail(where() + detail::concat("record ", k, "'s ", value_size,
                                        "-byte value runs past the end of the page"));
        }
        continue;
      }
      // The value is an overflow run: its first page's number is in the node.
      if (key_end + sizeof(std::uint64_t) > page_size_) {
        fail(where() + detail::concat("record ", k, "'s overflow page number is cut off"));
      }
      const std::uint64_t first = read_at<std::uint64_t>(bytes, key_end);
      const std::uint64_t pages = (kPageHeaderSize - 1 + value_size) / page_size_ + 1;
      // LMDB reads the run's header and the value right after it, page
      // after page, without looking at the pages it crosses.
      const bool in_database = first >= 2 && first <= last_page_ && pages <= last_page_ - first + 1;
      const bool readable = first <= readable_ / page_size_ &&
                            first * page_size_ + kPageHeaderSize + value_size <= readable_;
      if (!in_database || !readable) {
        fail(where() + detail::concat("record ", k, "'s ", value_size,
                                      "-byte value is said to start at page ", first,
                                      ", which puts it past the end of the ",
                                      in_database ? "file" : "database"));
      }
      found->overflow_pages += pages;
    }
  }

  std::string database_;
  std::size_t page_size_;
  int fd_ = -1;
  std::uint64_t file_size_ = 0;
  std::uint64_t readable_ = 0;
  std::uint64_t last_page_ = 0;
  unsigned depth_ = 0;
  std::unordered_set<std::uint64_t> visited_;
  std::vector<unsigned char> page_;
};

}  // namespace

void check_lmdb_meta_pages(const std::string& database_path) {
  const std::string file = database_path + "/data.mdb";
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // LMDB says why
  unsigned char meta[2][kMetaEnd];
  auto read_meta = [&](int which, std::uint64_t at) {
    return ::pread(fd, meta[which], kMetaEnd, static_cast<off_t>(at)) ==
               static_cast<ssize_t>(kMetaEnd) &&
           (read_at<std::uint16_t>(meta[which], kFlagsAt) & kMetaPage) != 0 &&
           read_at<std::uint32_t>(meta[which], kMagicAt) == kLmdbMagic &&
           read_at<std::uint32_t>(meta[which], kFormatAt) == kLmdbFormat;
  };
  auto fail = [&](const std::string& what) {
    ::close(fd);
    throw Error("LMDB '" + database_path + "' is damaged: " + what +
                "; rebuild the database (convert_imageset, convert_mnist_data)");
  };
  // Pages LMDB itself refuses (not an LMDB, another format version) are
  // left to its own error.
  if (!read_meta(0, 0)) return (void)::close(fd);
  const std::uint64_t page_size = read_at<std::uint32_t>(meta[0], kPageSizeAt);
  if (!is_lmdb_page_size(page_size)) {
    fail(detail::concat("meta page 0 gives a page size of ", page_size, " bytes"));
  }
  if (!read_meta(1, page_size)) return (void)::close(fd);
  const std::uint64_t other_page_size = read_at<std::uint32_t>(meta[1], kPageSizeAt);
  if (other_page_size != page_size) {
    fail(detail::concat("meta page 1 gives a page size of ", other_page_size,
                        " bytes, meta page 0 one of ", page_size));
  }
  // LMDB maps max(map size, pages in use) bytes of the newer meta page,
  // and reads both meta pages through the map.
  const int newer = read_at<std::uint64_t>(meta[1], kTxnIdAt) >
                            read_at<std::uint64_t>(meta[0], kTxnIdAt)
                        ? 1
                        : 0;
  const std::uint64_t last_page = read_at<std::uint64_t>(meta[newer], kLastPageAt);
  const std::uint64_t map_size = read_at<std::uint64_t>(meta[newer], kMapSizeAt);
  if (last_page >= (std::uint64_t{1} << 48) / page_size) {
    fail(detail::concat("meta page ", newer, " claims ", last_page, " pages in use"));
  }
  if (std::max(map_size, (last_page + 1) * page_size) < 2 * page_size) {
    fail(detail::concat("meta page ", newer, " asks for a ", map_size,
                        "-byte memory map with ", last_page + 1,
                        " page(s) in use, too small for the two meta pages"));
  }
  ::close(fd);
}

LmdbTreeCounts check_lmdb_tree(const std::string& database_path, const LmdbSnapshotPlace& place) {
  TreeWalk walk(database_path, place);
  const MainTree tree = walk.read_meta(place);
  const LmdbTreeCounts found = walk.walk(tree);
  const LmdbTreeCounts& claimed = tree.counts;
  if (found.entries != claimed.entries || found.branch_pages != claimed.branch_pages ||
      found.leaf_pages != claimed.leaf_pages || found.overflow_pages != claimed.overflow_pages) {
    walk.fail(detail::concat(
        "the meta page claims ", claimed.entries, " records in ", claimed.branch_pages, "+",
        claimed.leaf_pages, "+", claimed.overflow_pages,
        " branch+leaf+overflow pages, but the tree holds ", found.entries, " in ",
        found.branch_pages, "+", found.leaf_pages, "+", found.overflow_pages));
  }
  return found;
}

}  // namespace xtrain
