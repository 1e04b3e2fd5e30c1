// Command-line options of rankflow-bench.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "rankflow/error.h"

namespace rankflow::bench {

// By default, from this size every timed call gets freshly written input (rankflow_bench.cpp:
// touch), and caches can be settled before it (--settle-from); --fresh-from moves it.
constexpr size_t kFreshFrom = 64 * 1024;

struct Options {
  std::vector<std::string> collectives{"allreduce"};
  std::vector<std::string> algorithms{"auto"};
  size_t min_bytes = 4;
  size_t max_bytes = size_t{64} << 20;
  bool symmetric = true;
  bool registered = false;  // --buffers registered: plain memory, registered with the communicator
  bool huge_pages = false;  // --huge-pages: plain arrays on transparent 2 MiB pages (user_arrays.h)
  const char* buffers() const {
    return symmetric ? "symmetric" : registered ? "registered" : "user";
  }
  // How staged plain-buffer sources are copied in: table (as each algorithm says), memcpy,
  // stream (non-temporal stores), or ab (memcpy and stream batch by batch, a row each).
  std::string stage_copy = "table";
  // --nonblocking: each call is the non-blocking variant and its wait (rankflow's i* and
  // Request::wait, Open MPI's MPI_I* and MPI_Wait), as a code overlapping its own work calls it.
  bool nonblocking = false;
  int batches = 9;
  size_t batch_bytes = size_t{64} << 20;  // bytes moved per batch, which sets iterations
  size_t max_iters = 2000;
  // From this size every timed call, rankflow's and Open MPI's, is timed on its own after an
  // untimed store to each line of its input, as after an application wrote it; below, calls run
  // back to back on an unchanged input. SIZE_MAX (--fresh-from off): never.
  size_t fresh_from = kFreshFrom;
  // From this size every timed call starts from caches that hold none of the bench's buffers
  // (Driver::settle_caches); SIZE_MAX (--settle-from off): never. 16 MiB: there two ranks'
  // buffers fill a 32 MiB L3 for every collective (broadcast 32 MiB, allgather and
  // reduce_scatter 48, allreduce and all_to_all 64), so no code keeps them cached between calls;
  // below they stay partly cached, as in a code that iterates on its arrays.
  size_t settle_from = size_t{16} << 20;
  std::string json;
  std::string table;
  bool help = false;  // --help: print kUsage and run nothing
};

inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// `text` as bytes; InvalidArgument naming `option` where it is not a size.
inline size_t parse_bytes(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  const std::string suffix = end ? end : "";
  size_t scale = 1;
  if (suffix == "K" || suffix == "k")
    scale = 1024;
  else if (suffix == "M" || suffix == "m")
    scale = size_t{1} << 20;
  else if (suffix == "G" || suffix == "g")
    scale = size_t{1} << 30;
  else if (!suffix.empty() || end == text.c_str()) {
    throw InvalidArgument(option + ": '" + text + "' is not a size (bytes with optional K, M, G)");
  }
  return static_cast<size_t>(value) * scale;
}

inline const char* kUsage =
    "usage: rankflow-bench [--coll "
    "allreduce,allgather,reduce_scatter,broadcast,all_to_all,barrier|all]\n"
    "                      [--algo auto|onephase,twophase,ring,bidirectional_ring,ibing|all]\n"
    "                      [--min-bytes 4] [--max-bytes 64M] [--buffers "
    "symmetric|user|registered]\n"
    "                      [--huge-pages]\n"
    "                      [--stage-copy table|memcpy|stream|ab] [--nonblocking]\n"
    "                      [--batches 9] [--quick] [--fresh-from 64K|off] [--settle-from 16M|off]\n"
    "                      [--json PATH] [--table PATH] [--help]\n"
    "  --coll      collectives to sweep (default allreduce)\n"
    "  --algo      allreduce algorithms by registry name, or auto (default auto)\n"
    "  --min-bytes, --max-bytes  message sizes, powers of two between (K, M, G suffixes)\n"
    "  --buffers   symmetric: comm.alloc memory (default); user: plain std::vector memory;\n"
    "              registered: the same, registered (Communicator::register_buffer)\n"
    "  --huge-pages  with --buffers user: the arrays on transparent 2 MiB pages (madvise), as\n"
    "              an application may advise its own; the header says how many MiB the kernel\n"
    "              gave\n"
    "  --stage-copy  how plain sources are staged: as each algorithm's table entry says (table,\n"
    "              the default), memcpy, non-temporal stores (stream), or ab: memcpy and stream\n"
    "              in alternate batches, one row each (in-place calls are not timed then)\n"
    "  --nonblocking  every call as its non-blocking variant and a wait (rankflow's iallreduce\n"
    "              ... and Request::wait, beside Open MPI's MPI_Iallreduce ... and MPI_Wait)\n"
    "  --batches   timed batches per size; the median is reported (default 9)\n"
    "  --quick     fewer bytes per batch and at most 100 calls per batch\n"
    "  --fresh-from  from this size (default 64K) each call, rankflow's and Open MPI's, is\n"
    "              timed on its own after an untimed store to each cache line of its input, as\n"
    "              after the application wrote it; below, calls run back to back on unchanged\n"
    "              input; off: never. Below about 1K a call timed on its own mostly measures\n"
    "              how unevenly the ranks leave the barrier before it\n"
    "  --settle-from  from this size (default 16M, or --fresh-from where that is larger) each\n"
    "              call timed on its own, rankflow's and Open MPI's, starts from settled\n"
    "              caches: an untimed read of twice the last-level cache on every rank, then\n"
    "              its fresh input; so no call finds what the batch before it, of either\n"
    "              library, left in the caches; off: never (at least --fresh-from)\n"
    "  --json, --table  also write every row as JSON / as a whitespace table for plotting\n";

// Settling applies only to calls timed on their own after fresh input: a --settle-from below
// --fresh-from is refused; the default (16M) follows --fresh-from up where that is larger, and
// goes off with it.
inline void settle_where_fresh(Options& o, bool settle_given) {
  if (!settle_given) {
    o.settle_from = std::max(o.settle_from, o.fresh_from);
    return;
  }
  if (o.settle_from != SIZE_MAX && o.settle_from < o.fresh_from) {
    throw InvalidArgument("--settle-from " + std::to_string(o.settle_from) +
                          ": settling starts where each call gets fresh input (--fresh-from, "
                          "64K by default) or above, or is off");
  }
}

inline Options parse_options(int argc, char** argv) {
  Options o;
  bool settle_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InvalidArgument(arg + " needs a value\n" + kUsage);
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      return o;
    }
    if (arg == "--coll") {
      const std::string v = value();
      o.collectives = v == "all"
                          ? std::vector<std::string>{"allreduce", "allgather",  "reduce_scatter",
                                                     "broadcast", "all_to_all", "barrier"}
                          : split_list(v);
      for (const auto& c : o.collectives) {
        if (c != "allreduce" && c != "allgather" && c != "reduce_scatter" && c != "broadcast" &&
            c != "all_to_all" && c != "barrier") {
          throw InvalidArgument("unknown collective '" + c + "'\n" + kUsage);
        }
      }
    } else if (arg == "--algo") {
      o.algorithms.clear();
      for (const std::string& name : split_list(value())) {
        if (name == "all") {
          for (const char* a : {"onephase", "twophase", "ring", "bidirectional_ring", "ibing"}) {
            o.algorithms.push_back(a);
          }
        } else {
          o.algorithms.push_back(name);
        }
      }
    } else if (arg == "--min-bytes") {
      o.min_bytes = parse_bytes(value(), arg);
    } else if (arg == "--max-bytes") {
      o.max_bytes = parse_bytes(value(), arg);
    } else if (arg == "--buffers") {
      const std::string v = value();
      if (v != "symmetric" && v != "user" && v != "registered") {
        throw InvalidArgument("--buffers is symmetric, user or registered");
      }
      o.symmetric = v == "symmetric";
      o.registered = v == "registered";
    } else if (arg == "--huge-pages") {
      o.huge_pages = true;
    } else if (arg == "--stage-copy") {
      o.stage_copy = value();
      if (o.stage_copy != "table" && o.stage_copy != "memcpy" && o.stage_copy != "stream" &&
          o.stage_copy != "ab") {
        throw InvalidArgument("--stage-copy is table, memcpy, stream or ab");
      }
    } else if (arg == "--nonblocking") {
      o.nonblocking = true;
    } else if (arg == "--batches") {
      o.batches = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--quick") {
      o.batches = 3;
      o.batch_bytes = size_t{4} << 20;
      o.max_iters = 100;
    } else if (arg == "--fresh-from") {
      const std::string v = value();
      o.fresh_from = v == "off" ? SIZE_MAX : parse_bytes(v, arg);
    } else if (arg == "--settle-from") {
      const std::string v = value();
      o.settle_from = v == "off" ? SIZE_MAX : parse_bytes(v, arg);
      settle_given = true;
    } else if (arg == "--json") {
      o.json = value();
    } else if (arg == "--table") {
      o.table = value();
    } else {
      throw InvalidArgument("unknown option '" + arg + "'\n" + kUsage);
    }
  }
  settle_where_fresh(o, settle_given);
  if (o.min_bytes == 0 || o.min_bytes > o.max_bytes) {
    throw InvalidArgument("--min-bytes must be positive and at most --max-bytes");
  }
  if (o.huge_pages && (o.symmetric || o.registered)) {
    throw InvalidArgument(std::string("--huge-pages applies to --buffers user, not ") +
                          o.buffers() +
                          " (comm.alloc memory is rankflow's, and registering moves the pages "
                          "onto shared memory)");
  }
  if (o.nonblocking) {
    for (const std::string& name : o.algorithms) {
      if (name == "mpi") {
        throw InvalidArgument(
            "--nonblocking with --algo mpi: Open MPI's transfer runs blocking calls only");
      }
    }
  }
  return o;
}

}  // namespace rankflow::bench
