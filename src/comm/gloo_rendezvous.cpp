// The shared-directory rendezvous of the Gloo backend: the store, the
// address each rank listens on, and the forming of the job's contexts.
#ifdef XTRAIN_HAVE_GLOO

#include "comm/gloo_rendezvous.hpp"

#include <arpa/inet.h>
#include <gloo/barrier.h>
#include <gloo/common/error.h>
#include <gloo/config.h>
#include <gloo/transport/tcp/device.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "comm/collective_messages.hpp"
#include "xtrain/error.hpp"

#if !GLOO_HAVE_TRANSPORT_TCP
#error "xtrain's Gloo backend needs Gloo's TCP transport (GLOO_HAVE_TRANSPORT_TCP)"
#endif

namespace xtrain {
namespace {

std::chrono::milliseconds to_milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0 + 0.5));
}

const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// Ranks started by one launcher share its job id; the keys carry it, so that
// two jobs forming at the same moment in one directory do not meet. Ranks
// placed by --rank flags have no id in common: they meet under the plain
// prefix.
std::string job_prefix(const ProcessGroup& group) {
  std::string id;
  if (group.launcher == "slurm" && variable("SLURM_JOB_ID") != nullptr) {
    id = variable("SLURM_JOB_ID");
    if (variable("SLURM_STEP_ID") != nullptr) id += std::string(".") + variable("SLURM_STEP_ID");
  } else if (group.launcher == "torchrun" && variable("TORCHELASTIC_RUN_ID") != nullptr) {
    id = variable("TORCHELASTIC_RUN_ID");
  }
  return "xtrain" + (id.empty() ? std::string() : "-" + id);
}

std::string numeric_address(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text,
              sizeof(text));
  } else if (address->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text,
              sizeof(text));
  }
  return text;
}

bool is_link_local_ipv6(const sockaddr* address) {
  if (address->sa_family != AF_INET6) return false;
  const auto* bytes = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr.s6_addr;
  return bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80;
}

struct InterfaceAddress {
  std::string interface;
  std::string address;
};

// Every interface's usable addresses (IPv4 first, then global IPv6).
std::vector<InterfaceAddress> interface_addresses(bool up_and_not_loopback) {
  std::vector<InterfaceAddress> ipv4, ipv6;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    if (up_and_not_loopback &&
        ((entry->ifa_flags & IFF_UP) == 0 || (entry->ifa_flags & IFF_LOOPBACK) != 0)) {
      continue;
    }
    if (entry->ifa_addr->sa_family == AF_INET) {
      ipv4.push_back({entry->ifa_name, numeric_address(entry->ifa_addr)});
    } else if (entry->ifa_addr->sa_family == AF_INET6 && !is_link_local_ipv6(entry->ifa_addr)) {
      ipv6.push_back({entry->ifa_name, numeric_address(entry->ifa_addr)});
    }
  }
  freeifaddrs(list);
  ipv4.insert(ipv4.end(), ipv6.begin(), ipv6.end());
  return ipv4;
}

// The host name's first non-loopback IPv4 address, or "" (Debian maps the
// host name to 127.0.1.1, which the other nodes cannot reach).
std::string host_name_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return "";
  std::string chosen;
  for (const addrinfo* entry = result; entry != nullptr && chosen.empty(); entry = entry->ai_next) {
    const auto* ipv4 = reinterpret_cast<const sockaddr_in*>(entry->ai_addr);
    if ((ntohl(ipv4->sin_addr.s_addr) >> 24) != 127) chosen = numeric_address(entry->ai_addr);
  }
  freeaddrinfo(result);
  return chosen;
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

// Where this rank listens, and why there (for the log): GLOO_SOCKET_IFNAME's
// interface (PyTorch's variable), else the host name's address, else the
// first interface that is up, else loopback (one host only).
std::string listen_address(std::string* why) {
  if (const char* names = variable("GLOO_SOCKET_IFNAME")) {
    const std::string wanted = std::string(names).substr(0, std::string(names).find(','));
    std::string known;
    for (const InterfaceAddress& entry : interface_addresses(false)) {
      if (entry.interface == wanted) {
        *why = wanted + ", from GLOO_SOCKET_IFNAME";
        return entry.address;
      }
      if (known.find(entry.interface) == std::string::npos) {
        known += (known.empty() ? "" : ", ") + entry.interface;
      }
    }
    XTRAIN_CHECK(false, "GLOO_SOCKET_IFNAME=", names, ": this host (", this_host(),
                 ") has no interface '", wanted, "' with an address (interfaces here: ", known,
                 "): name the interface of the network between the nodes, or unset it");
  }
  const std::string host = this_host();
  const std::string by_name = host_name_address(host);
  if (!by_name.empty()) {
    *why = "the address of host name " + host + "; GLOO_SOCKET_IFNAME chooses an interface";
    return by_name;
  }
  const std::vector<InterfaceAddress> up = interface_addresses(true);
  if (!up.empty()) {
    *why = up.front().interface + ", the first interface that is up; GLOO_SOCKET_IFNAME chooses "
           "another";
    return up.front().address;
  }
  *why = "loopback: no other interface is up, so only ranks on this host can join";
  return "127.0.0.1";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += i + 1 == ranks.size() ? " and " : ", ";
    text += std::to_string(ranks[i]);
  }
  return text;
}

// Gloo's messages start with "[/path/to/file.cc:123] ": the rest is for people.
std::string without_source_location(const std::string& text) {
  if (text.empty() || text.front() != '[') return text;
  const auto end = text.find("] ");
  return end == std::string::npos ? text : text.substr(end + 2);
}

}  // namespace

RendezvousDirectory::RendezvousDirectory(const std::string& directory, std::string prefix,
                                         double timeout_seconds)
    : gloo::rendezvous::FileStore(directory),
      directory_(directory),
      prefix_(std::move(prefix)),
      timeout_(to_milliseconds(timeout_seconds)) {}

void RendezvousDirectory::set(const std::string& key, const std::vector<char>& data) {
  const std::string path = objectPath(prefix_ + key);
  XTRAIN_CHECK(!std::filesystem::exists(path), "the rendezvous directory '", directory_,
               "' already holds this rank's entry '", key, "' (", path,
               "): a job that was killed or failed while it formed left it there; delete the "
               "files of that directory (no job may be forming in it) and start again, or give "
               "each job a directory of its own");
  FileStore::set(prefix_ + key, data);
}

std::vector<char> RendezvousDirectory::get(const std::string& key) {
  // FileStore::get waits for the key through wait(keys), below.
  return FileStore::get(prefix_ + key);
}

void RendezvousDirectory::wait(const std::vector<std::string>& keys) {
  FileStore::wait(keys, timeout_);
  seen_.insert(keys.begin(), keys.end());
}

// Gloo's contexts pass their own timeouts (or the store's 30 s default);
// this job's is the one that counts. Keys given here are prefixed already
// when they come through get(), not when Gloo's context calls wait itself.
void RendezvousDirectory::wait(const std::vector<std::string>& keys,
                               const std::chrono::milliseconds&) {
  std::vector<std::string> prefixed;
  for (const std::string& key : keys) {
    prefixed.push_back(key.rfind(prefix_, 0) == 0 ? key : prefix_ + key);
  }
  FileStore::wait(prefixed, timeout_);
  seen_.insert(prefixed.begin(), prefixed.end());
}

bool RendezvousDirectory::arrived(int rank) {
  const std::string host_key = "rank_" + std::to_string(rank);
  const std::string address_key = std::to_string(rank);
  return seen_.count(prefix_ + host_key) > 0 || seen_.count(prefix_ + address_key) > 0 ||
         has(host_key) || has(address_key);
}

bool RendezvousDirectory::has(const std::string& key) {
  return std::filesystem::exists(objectPath(prefix_ + key));
}

void RendezvousDirectory::remove_own_entries() {
  for (const std::string& path : getAllKeyFilePaths()) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
}

GlooJob form_gloo_job(const ProcessGroup& group, double timeout_seconds) {
  const std::string& directory = group.rendezvous;
  const std::string where = "rank " + std::to_string(group.rank) + " of " +
                            std::to_string(group.size);
  std::error_code error;
  XTRAIN_CHECK(std::filesystem::is_directory(directory, error), where,
               ": the rendezvous directory '", directory,
               "' does not exist: create it on a file system that every node of the job "
               "sees (NFS, Lustre; any local directory for ranks on one host)");
  XTRAIN_CHECK(::access(directory.c_str(), W_OK | X_OK) == 0, where,
               ": cannot write in the rendezvous directory '", directory,
               "': every rank writes its address there");

  GlooJob job;
  const std::string prefix = job_prefix(group);
  RendezvousDirectory collectives_store(directory, prefix + "/collectives/", timeout_seconds);
  RendezvousDirectory watch_store(directory, prefix + "/watch/", timeout_seconds);
  std::string why;
  job.address = listen_address(&why);
  job.address += " (" + why + ")";
  try {
    gloo::transport::tcp::attr attributes(job.address.substr(0, job.address.find(' ')).c_str());
    job.device = gloo::transport::tcp::CreateDevice(attributes);
    const auto timeout = to_milliseconds(timeout_seconds);
    job.collectives = std::make_shared<gloo::rendezvous::Context>(group.rank, group.size);
    job.collectives->setTimeout(timeout);
    job.collectives->connectFullMesh(collectives_store, job.device);
    // connectFullMesh left every rank's host name under rank_<r>.
    for (int rank = 0; rank < group.size; ++rank) {
      const std::vector<char> name = collectives_store.get("rank_" + std::to_string(rank));
      job.hosts.emplace_back(name.begin(), name.end());
    }
    job.watch = std::make_shared<gloo::rendezvous::Context>(group.rank, group.size);
    job.watch->setTimeout(timeout);
    job.watch->connectFullMesh(watch_store, job.device);
    // Once every rank is here, every rank has read every entry: they can go.
    gloo::BarrierOptions barrier(job.collectives);
    barrier.setTimeout(timeout);
    gloo::barrier(barrier);
  } catch (const Error&) {
    collectives_store.remove_own_entries();
    watch_store.remove_own_entries();
    throw;
  } catch (const std::exception& failure) {
    std::vector<int> missing;
    for (int rank = 0; rank < group.size; ++rank) {
      if (rank != group.rank && !collectives_store.arrived(rank)) missing.push_back(rank);
    }
    collectives_store.remove_own_entries();
    watch_store.remove_own_entries();
    std::ostringstream seconds;
    seconds << timeout_seconds;
    if (!missing.empty()) {
      throw Error(where + ": the job did not form within " + seconds.str() +
                  " s in the rendezvous directory '" + directory + "': " + rank_list(missing) + " never arrived" +
                  " (start every rank with the same --rendezvous and --world_size=" +
                  std::to_string(group.size) +
                  ", each with its own --rank, on a directory every node sees; raise "
                  "--collective_timeout if the ranks start far apart)");
    }
    throw Error(where + ": the ranks met in the rendezvous directory '" + directory +
                "' but could not connect within " + seconds.str() + " s: " +
                without_source_location(failure.what()) + " (this rank listens on " +
                job.address +
                "; set GLOO_SOCKET_IFNAME to the interface of the network between the nodes)");
  }
  collectives_store.remove_own_entries();
  watch_store.remove_own_entries();
  return job;
}

}  // namespace xtrain

#endif  // XTRAIN_HAVE_GLOO
