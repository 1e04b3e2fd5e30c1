// rankflow-bench: collectives in library mode beside Open MPI's, in the same run.
//
//   mpirun -n 2 --bind-to core build/bench/rankflow-bench [options]
//
// For each collective, algorithm and size it prints nccl-tests columns (out-of-place, then in
// place), the same collective through MPI_* measured in interleaved batches, and the ratio of
// bus bandwidths, plus the single-core memcpy ceiling at that size. Times are microseconds per
// call, the max over ranks of each batch, the median over batches after a warm-up. Every size
// is checked against MPI's result on the same inputs (#wrong must be 0). The algorithm column
// is --algo for allreduce and "direct" for the others (nothing to force from the command line:
// their override variables, RANKFLOW_BROADCAST and the others, do that); the last column, ran,
// is the algorithm the out-of-place call actually ran, the table's choice for that size.
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "api/communicator_internal.h"
#include "bench/coll/bench_options.h"
#include "bench/coll/user_arrays.h"
#include "collectives/machine_profile.h"
#include "collectives/stage_copy.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string coll, algo, buffers;
  std::string ran = "-";  // the algorithm the out-of-place call ran (its table's choice)
  size_t bytes = 0, count = 0;
  int root = -1;
  double oop_us = 0, ip_us = 0, mpi_us = 0, memcpy_gbs = 0;
  long wrong_oop = 0, wrong_ip = 0;
  double busbw_factor = 1;
  double algbw(double us) const { return us > 0 ? bytes / us / 1e3 : 0; }
  double busbw(double us) const { return algbw(us) * busbw_factor; }
};

double max_over_ranks(double value) {
  double result = 0;
  MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0
                   : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

// Times `fn` in `batches` batches of `iters` calls; returns the median of per-batch maxima (us).
double time_batches(const std::function<void()>& fn, const std::function<void()>& sync, int iters,
                    int batches, std::vector<double>* out) {
  for (int i = 0; i < std::max(1, iters / 4); ++i)
    fn();  // warm-up
  std::vector<double> per_batch;
  for (int b = 0; b < batches; ++b) {
    sync();
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i)
      fn();
    const double us =
        std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
    per_batch.push_back(max_over_ranks(us));
  }
  if (out) *out = per_batch;
  return median(per_batch);
}

// Times `iters` calls one by one, each after `prepare()` and `sync()` (neither counted);
// returns the max over ranks of the mean per-call time (us).
double time_calls(const std::function<void()>& fn, const std::function<void()>& prepare,
                  const std::function<void()>& sync, int iters) {
  prepare();
  fn();  // warm-up
  double total = 0;
  for (int i = 0; i < iters; ++i) {
    prepare();
    sync();
    const auto start = Clock::now();
    fn();
    total += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  return max_over_ranks(total / iters);
}

// One store per cache line: the buffer's lines become this core's, as after the application
// wrote fresh input, so no peer can serve a collective from a stale cached copy.
void touch(std::byte* data, size_t bytes) {
  volatile std::byte* p = data;
  for (size_t i = 0; i < bytes; i += 64)
    p[i] = p[i];
}

class Driver {
 public:
  Driver(const Options& options, Communicator& comm) : o_(options), comm_(comm) {
    const size_t per_buffer = o_.max_bytes * 2 + 4096;
    if (o_.symmetric) {
      arena_ = comm_.alloc(2 * per_buffer);
      send_ = static_cast<std::byte*>(arena_.data());
      recv_ = send_ + per_buffer;
    } else {
      user_.allocate(2 * per_buffer, o_.huge_pages);
      send_ = user_.data();
      recv_ = send_ + per_buffer;
      if (o_.registered) registration_ = comm_.register_buffer(user_.data(), 2 * per_buffer);
    }
    mpi_send_.resize(per_buffer);
    mpi_recv_.resize(per_buffer);
    copy_a_.resize(o_.max_bytes);
    copy_b_.resize(o_.max_bytes + kCopySkew);
    if (o_.settle_from <= o_.max_bytes) settle_.assign(settle_bytes(), std::byte{1});
  }

  void run() {
    if (o_.stage_copy == "memcpy") coll::set_stage_copy(coll::StageCopy::kMemcpy);
    if (o_.stage_copy == "stream") coll::set_stage_copy(coll::StageCopy::kStream);
    print_header();
    for (const std::string& coll : o_.collectives) {
      for (const std::string& algo : algorithms_for(coll)) {
        if (coll == "barrier") {
          measure(coll, algo, 0);
          continue;
        }
        for (size_t bytes = o_.min_bytes; bytes <= o_.max_bytes; bytes *= 2)
          measure(coll, algo, bytes);
      }
    }
    if (!o_.json.empty() && comm_.rank() == 0) write_json();
    if (!o_.table.empty() && comm_.rank() == 0) write_table();
  }

 private:
  std::vector<std::string> algorithms_for(const std::string& coll) const {
    if (coll != "allreduce") return {"direct"};
    return o_.algorithms;
  }

  double busbw_factor(const std::string& coll) const {
    const double n = comm_.size();
    if (coll == "allreduce") return 2 * (n - 1) / n;
    if (coll == "broadcast" || coll == "barrier") return 1;
    return (n - 1) / n;
  }

  // Elements per call argument: allreduce/broadcast S, allgather/all_to_all per-rank block,
  // reduce_scatter this rank's block.
  size_t count_for(const std::string& coll, size_t bytes) const {
    const size_t elems = bytes / 4;
    if (coll == "allreduce" || coll == "broadcast") return elems;
    return elems / static_cast<size_t>(comm_.size());
  }

  void fill(std::byte* data, size_t bytes) const {
    auto* f = reinterpret_cast<float*>(data);
    for (size_t i = 0; i < bytes / 4; ++i)
      f[i] = static_cast<float>(i % 7 + comm_.rank());
  }

  // The blocking call, or with --nonblocking its non-blocking variant waited on at once.
  template <typename Blocking, typename Start>
  std::function<void()> as_chosen(Blocking blocking, Start start) const {
    if (!o_.nonblocking) return blocking;
    return [start] { start().wait(); };
  }
  template <typename Blocking, typename Start>
  std::function<void()> mpi_as_chosen(Blocking blocking, Start start) const {
    if (!o_.nonblocking) return blocking;
    return [start] {
      MPI_Request request;
      start(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    };
  }

  std::function<void()> rankflow_call(const std::string& coll, const std::string& algo,
                                      size_t count, bool in_place) {
    std::byte* send = send_;
    std::byte* recv = in_place ? send_ : recv_;
    const size_t block = count * 4;
    const Communicator& c = comm_;
    const DType f32 = DType::kF32;
    const ReduceOp sum = ReduceOp::kSum;
    if (coll == "allreduce") {
      return as_chosen([=, &c] { c.allreduce(send, recv, count, f32, sum, algo); },
                       [=, &c] { return c.iallreduce(send, recv, count, f32, sum, algo); });
    }
    if (coll == "allgather") {
      std::byte* src = in_place ? recv_ + block * comm_.rank() : send;
      std::byte* out = recv_;
      return as_chosen([=, &c] { c.allgather(src, out, count, f32); },
                       [=, &c] { return c.iallgather(src, out, count, f32); });
    }
    if (coll == "reduce_scatter") {
      return as_chosen([=, &c] { c.reduce_scatter(send, recv, count, f32, sum); },
                       [=, &c] { return c.ireduce_scatter(send, recv, count, f32, sum); });
    }
    if (coll == "broadcast") {
      return as_chosen([=, &c] { c.broadcast(send, count, f32, 0); },
                       [=, &c] { return c.ibroadcast(send, count, f32, 0); });
    }
    if (coll == "all_to_all") {
      return as_chosen([=, &c] { c.all_to_all(send, recv, count, f32); },
                       [=, &c] { return c.iall_to_all(send, recv, count, f32); });
    }
    return as_chosen([&c] { c.barrier(); }, [&c] { return c.ibarrier(); });
  }

  // Open MPI's call on its own buffers (check() compares the two results), or, to time it,
  // on rankflow's where those are the caller's plain memory: the same pages, so that neither
  // side's figure depends on how its buffers happened to be backed (Open MPI's own collective,
  // run through a communicator on separate vectors, read × 0.6-0.9 of itself from 4 MiB).
  std::function<void()> mpi_call(const std::string& coll, size_t count, bool timed = false) {
    const int n = static_cast<int>(count);
    const bool shared = timed && !o_.symmetric;
    void* s = shared ? send_ : mpi_send_.data();
    void* r = shared ? recv_ : mpi_recv_.data();
    MPI_Comm c = comm_.mpi_comm();
    if (coll == "allreduce") {
      return mpi_as_chosen(
          [=] { MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, c); },
          [=](MPI_Request* q) { MPI_Iallreduce(s, r, n, MPI_FLOAT, MPI_SUM, c, q); });
    }
    if (coll == "allgather") {
      return mpi_as_chosen(
          [=] { MPI_Allgather(s, n, MPI_FLOAT, r, n, MPI_FLOAT, c); },
          [=](MPI_Request* q) { MPI_Iallgather(s, n, MPI_FLOAT, r, n, MPI_FLOAT, c, q); });
    }
    if (coll == "reduce_scatter") {
      return mpi_as_chosen(
          [=] { MPI_Reduce_scatter_block(s, r, n, MPI_FLOAT, MPI_SUM, c); },
          [=](MPI_Request* q) { MPI_Ireduce_scatter_block(s, r, n, MPI_FLOAT, MPI_SUM, c, q); });
    }
    if (coll == "broadcast") {
      return mpi_as_chosen([=] { MPI_Bcast(s, n, MPI_FLOAT, 0, c); },
                           [=](MPI_Request* q) { MPI_Ibcast(s, n, MPI_FLOAT, 0, c, q); });
    }
    if (coll == "all_to_all") {
      return mpi_as_chosen(
          [=] { MPI_Alltoall(s, n, MPI_FLOAT, r, n, MPI_FLOAT, c); },
          [=](MPI_Request* q) { MPI_Ialltoall(s, n, MPI_FLOAT, r, n, MPI_FLOAT, c, q); });
    }
    return mpi_as_chosen([=] { MPI_Barrier(c); }, [=](MPI_Request* q) { MPI_Ibarrier(c, q); });
  }

  size_t result_bytes(const std::string& coll, size_t count) const {
    if (coll == "allgather" || coll == "all_to_all") return count * 4 * comm_.size();
    if (coll == "barrier") return 0;
    return count * 4;
  }

  size_t input_bytes(const std::string& coll, size_t count) const {
    if (coll == "allreduce" || coll == "broadcast" || coll == "allgather") return count * 4;
    if (coll == "barrier") return 0;
    return count * 4 * comm_.size();
  }

  // Runs both once on the same inputs; returns how many float elements differ.
  long check(const std::string& coll, const std::string& algo, size_t count, bool in_place) {
    const size_t in_bytes = input_bytes(coll, count);
    fill(send_, in_bytes);
    fill(mpi_send_.data(), in_bytes);
    if (coll == "allgather" && in_place) fill(recv_ + count * 4 * comm_.rank(), count * 4);
    rankflow_call(coll, algo, count, in_place)();
    mpi_call(coll, count)();
    const std::byte* got = (in_place && coll != "allgather") ? send_ : recv_;
    if (coll == "broadcast") got = send_;
    const std::byte* want = coll == "broadcast" ? mpi_send_.data() : mpi_recv_.data();
    long wrong = 0;
    const auto* g = reinterpret_cast<const float*>(got);
    const auto* w = reinterpret_cast<const float*>(want);
    for (size_t i = 0; i < result_bytes(coll, count) / 4; ++i)
      wrong += g[i] != w[i];
    long total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return total;
  }

  // The single-core memcpy ceiling at `bytes`, stable whatever size a run starts at: warm (one
  // untimed pass), between buffers whose addresses differ modulo 4 KiB (a source and a
  // destination at the same page offset stall every load behind the stores: 4 KiB aliasing),
  // and the best of its batches (a ceiling: noise only lowers it).
  double memcpy_gbs(size_t bytes) {
    const std::byte* from = copy_a_.data();
    std::byte* to = copy_b_.data() + kCopySkew;
    std::memcpy(to, from, bytes);
    std::vector<double> samples;
    const int iters = static_cast<int>(std::clamp<size_t>((size_t{64} << 20) / bytes, 1, 2000));
    for (int b = 0; b < o_.batches; ++b) {
      const auto start = Clock::now();
      for (int i = 0; i < iters; ++i) {
        std::memcpy(to, from, bytes);
        asm volatile("" ::: "memory");
      }
      samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / iters);
    }
    return bytes / *std::min_element(samples.begin(), samples.end()) / 1e9;
  }

  // The algorithm the communicator chose for its latest call of `coll` ("pushed" for
  // "broadcast(pushed)"), "-" for the barrier (it has one algorithm).
  std::string chosen_by_the_last_call(const std::string& coll) const {
    const std::string label = api::last_chosen_algorithm(comm_);
    if (coll == "barrier" || label.rfind(coll + "(", 0) != 0) return "-";
    return label.substr(coll.size() + 1, label.size() - coll.size() - 2);
  }

  // One timed batch: `calls` calls each after `prepare` (fresh input: per_call), or `calls`
  // back to back.
  static double time_batch(const std::function<void()>& fn, const std::function<void()>& prepare,
                           const std::function<void()>& sync, int calls, bool per_call) {
    if (per_call) return time_calls(fn, prepare, sync, calls);
    std::vector<double> s;
    time_batches(fn, sync, calls, 1, &s);
    return s[0];
  }

  // --stage-copy ab: out-of-place calls with memcpy staging and with non-temporal staging in
  // alternate batches, beside Open MPI's, so drift hits all three alike; a row each.
  void measure_stage_copies(Row row, int calls, bool per_call, const std::function<void()>& oop,
                            const std::function<void()>& mpi, const std::function<void()>& fresh,
                            const std::function<void()>& fresh_mpi,
                            const std::function<void()>& sync,
                            const std::function<void()>& mpi_sync) {
    using coll::StageCopy;
    const StageCopy ways[] = {StageCopy::kMemcpy, StageCopy::kStream};
    std::vector<double> times[2], mpi_b;
    for (int b = 0; b < o_.batches; ++b) {
      for (int w = 0; w < 2; ++w) {
        coll::set_stage_copy(ways[w]);
        times[w].push_back(time_batch(oop, fresh, sync, calls, per_call));
        if (w == 0) mpi_b.push_back(time_batch(mpi, fresh_mpi, mpi_sync, calls, per_call));
      }
    }
    coll::set_stage_copy(StageCopy::kTable);
    const std::string algo = row.algo;
    for (int w = 0; w < 2; ++w) {
      coll::set_stage_copy(ways[w]);
      row.algo = algo + (w == 0 ? "+memcpy" : "+stream");
      row.oop_us = median(times[w]);
      row.mpi_us = median(mpi_b);
      row.wrong_oop = row.coll == "barrier" ? 0 : check(row.coll, algo, row.count, false);
      row.ran = chosen_by_the_last_call(row.coll);
      row.memcpy_gbs = row.coll == "barrier" ? 0 : memcpy_gbs(row.bytes);
      rows_.push_back(row);
      if (comm_.rank() == 0) print(row);
    }
    coll::set_stage_copy(StageCopy::kTable);
  }

  void measure(const std::string& coll, const std::string& algo, size_t bytes) {
    Row row{coll, algo, o_.buffers()};
    row.count = count_for(coll, bytes);
    if (coll != "barrier" && row.count == 0) return;
    row.bytes = coll == "barrier" ? 0 : bytes;
    row.root = coll == "broadcast" ? 0 : -1;
    row.busbw_factor = busbw_factor(coll);
    const int iters = static_cast<int>(
        std::clamp<size_t>(o_.batch_bytes / std::max<size_t>(bytes, 1), 4, o_.max_iters));
    auto sync = [this] { comm_.barrier(); };
    auto mpi_sync = [this] { MPI_Barrier(comm_.mpi_comm()); };
    auto oop = rankflow_call(coll, algo, row.count, false);
    auto ip = rankflow_call(coll, algo, row.count, true);
    auto mpi = mpi_call(coll, row.count, true);
    // Interleave batches so that drift of the shared machine hits both sides alike. From
    // o_.fresh_from up, every call gets freshly written input (see touch), as in an application,
    // from settle_from up after settled caches (settle_caches).
    const size_t input = input_bytes(coll, row.count);
    const bool per_call = bytes >= o_.fresh_from && coll != "barrier";
    const bool settles = per_call && bytes >= o_.settle_from;
    auto fresh_input = [this, input, settles](std::byte* at) {
      if (settles) settle_caches();
      touch(at, input);
    };
    auto fresh = [&fresh_input, this] { fresh_input(send_); };
    // In-place allgather's input is this rank's block of recv.
    std::byte* ip_input = coll == "allgather" ? recv_ + row.count * 4 * comm_.rank() : send_;
    auto fresh_ip = [&fresh_input, ip_input] { fresh_input(ip_input); };
    std::byte* mpi_input = o_.symmetric ? mpi_send_.data() : send_;
    auto fresh_mpi = [&fresh_input, mpi_input] { fresh_input(mpi_input); };
    if (o_.stage_copy == "ab") {
      measure_stage_copies(row, per_call ? std::max(2, iters / 2) : iters, per_call, oop, mpi,
                           fresh, fresh_mpi, sync, mpi_sync);
      return;
    }
    const int calls = per_call ? std::max(2, iters / 2) : iters;
    // rankflow's out-of-place batch and Open MPI's swap places every batch, so that each follows
    // the other as often as it follows the in-place batch: what a batch leaves in the caches (an
    // in-place batch leaves recv cold, an out-of-place one warm) then favours neither. In a fixed
    // order (rankflow, Open MPI, in place) rankflow's calls always followed its in-place ones,
    // which read as × 0.8 for the very same MPI_Alltoall through the communicator at 16 MiB.
    std::vector<double> oop_b, ip_b, mpi_b;
    for (int b = 0; b < o_.batches; ++b) {
      if (b % 2 == 1) mpi_b.push_back(time_batch(mpi, fresh_mpi, mpi_sync, calls, per_call));
      oop_b.push_back(time_batch(oop, fresh, sync, calls, per_call));
      if (b % 2 == 0) mpi_b.push_back(time_batch(mpi, fresh_mpi, mpi_sync, calls, per_call));
      ip_b.push_back(time_batch(ip, fresh_ip, sync, calls, per_call));
    }
    row.oop_us = median(oop_b);
    row.ip_us = median(ip_b);
    row.mpi_us = median(mpi_b);
    row.wrong_oop = coll == "barrier" ? 0 : check(coll, algo, row.count, false);
    row.ran = chosen_by_the_last_call(coll);  // check() ran the out-of-place call last
    row.wrong_ip = coll == "barrier" ? 0 : check(coll, algo, row.count, true);
    row.memcpy_gbs = coll == "barrier" ? 0 : memcpy_gbs(bytes);
    if (coll == "barrier") row.busbw_factor = 0;
    rows_.push_back(row);
    if (comm_.rank() == 0) print(row);
  }

  void print_header() const {
    if (comm_.rank() != 0) return;
    std::printf(
        "# rankflow-bench: %d ranks, %s buffers, f32 sum, %s calls, median of %d batches\n",
        comm_.size(),
        o_.symmetric    ? "symmetric (comm.alloc)"
        : o_.registered ? "registered plain"
                        : "plain user",
        o_.nonblocking ? "non-blocking (each waited on at once; Open MPI's MPI_I*)" : "blocking",
        o_.batches);
    if (o_.fresh_from <= o_.max_bytes) {
      std::printf(
          "# from %zu B up every call gets freshly written input (one store per cache "
          "line, not timed), for rankflow and MPI alike\n",
          o_.fresh_from);
    }
    if (o_.settle_from <= o_.max_bytes) {
      std::printf(
          "# from %zu B up every call starts from settled caches (an untimed read of %zu "
          "MiB beforehand)\n",
          o_.settle_from, settle_bytes() >> 20);
    }
    if (!o_.symmetric) std::printf("# Open MPI is timed on the same plain buffers as rankflow\n");
    if (o_.huge_pages) {
      std::printf(
          "# plain arrays on 2 MiB pages (--huge-pages): madvise %s, %zu MiB of huge pages on "
          "rank 0\n",
          user_.advised() ? "accepted" : "refused (transparent huge pages off?)", user_.huge_mib());
    }
    const std::string cpu = coll::describe(coll::this_cpu());
    std::printf("# machine profile of the algorithm tables: %.*s (this CPU: %s)\n",
                static_cast<int>(comm_.machine_profile().size()), comm_.machine_profile().data(),
                cpu.c_str());
    std::printf(
        "#%-14s %-18s %10s %10s %5s %5s | %9s %8s %8s %6s | %9s %8s %8s %6s | %9s %8s | %6s %7s | "
        "%s\n",
        "collective", "algorithm", "size", "count", "type", "redop", "time", "algbw", "busbw",
        "#wrong", "time", "algbw", "busbw", "#wrong", "MPI time", "busbw", "ratio", "memcpy",
        "ran");
    std::printf(
        "#%-14s %-18s %10s %10s %5s %5s | %9s %8s %8s %6s | %9s %8s %8s %6s | %9s %8s | %6s %7s | "
        "%s\n",
        "", "", "(B)", "(elems)", "", "", "(us)", "(GB/s)", "(GB/s)", "oop", "(us)", "(GB/s)",
        "(GB/s)", "ip", "(us)", "(GB/s)", "", "(GB/s)", "(oop)");
  }

  void print(const Row& r) const {
    std::printf(
        "%-15s %-18s %10zu %10zu %5s %5s | %9.2f %8.2f %8.2f %6ld | %9.2f %8.2f %8.2f %6ld | %9.2f "
        "%8.2f | %6.2f %7.1f | %s\n",
        r.coll.c_str(), r.algo.c_str(), r.bytes, r.count, "float", "sum", r.oop_us,
        r.algbw(r.oop_us), r.busbw(r.oop_us), r.wrong_oop, r.ip_us, r.algbw(r.ip_us),
        r.busbw(r.ip_us), r.wrong_ip, r.mpi_us, r.busbw(r.mpi_us),
        r.oop_us > 0 ? r.mpi_us / r.oop_us : 0, r.memcpy_gbs, r.ran.c_str());
    std::fflush(stdout);
  }

  // A size option for JSON: its bytes, or null where it is off.
  static std::string bytes_or_null(size_t bytes) {
    return bytes == SIZE_MAX ? "null" : std::to_string(bytes);
  }

  void write_json() const {
    std::ofstream out(o_.json);
    out << "{\"ranks\": " << comm_.size() << ", \"buffers\": \"" << o_.buffers()
        << "\", \"nonblocking\": " << (o_.nonblocking ? "true" : "false")
        << ", \"huge_pages\": " << (o_.huge_pages ? "true" : "false")
        << ", \"fresh_from\": " << bytes_or_null(o_.fresh_from)
        << ", \"settle_from\": " << bytes_or_null(o_.settle_from) << ", \"rows\": [\n";
    for (size_t i = 0; i < rows_.size(); ++i) {
      const Row& r = rows_[i];
      out << "  {\"collective\": \"" << r.coll << "\", \"algorithm\": \"" << r.algo
          << "\", \"bytes\": " << r.bytes << ", \"count\": " << r.count << ", \"type\": \"float\""
          << ", \"redop\": \"sum\", \"root\": " << r.root << ", \"oop_us\": " << r.oop_us
          << ", \"oop_busbw\": " << r.busbw(r.oop_us) << ", \"oop_wrong\": " << r.wrong_oop
          << ", \"ip_us\": " << r.ip_us << ", \"ip_busbw\": " << r.busbw(r.ip_us)
          << ", \"ip_wrong\": " << r.wrong_ip << ", \"mpi_us\": " << r.mpi_us
          << ", \"mpi_busbw\": " << r.busbw(r.mpi_us) << ", \"memcpy_gbs\": " << r.memcpy_gbs
          << ", \"ran\": \"" << r.ran << "\"}" << (i + 1 < rows_.size() ? "," : "") << "\n";
    }
    out << "]}\n";
  }

  // Whitespace-separated table for gnuplot and awk: one line per row.
  void write_table() const {
    std::ofstream out(o_.table);
    out << "# collective algorithm bytes oop_us oop_busbw ip_us ip_busbw mpi_us mpi_busbw "
           "memcpy_gbs wrong ran\n";
    for (const Row& r : rows_) {
      out << r.coll << " " << r.algo << " " << r.bytes << " " << r.oop_us << " "
          << r.busbw(r.oop_us) << " " << r.ip_us << " " << r.busbw(r.ip_us) << " " << r.mpi_us
          << " " << r.busbw(r.mpi_us) << " " << r.memcpy_gbs << " " << (r.wrong_oop + r.wrong_ip)
          << " " << r.ran << "\n";
    }
  }

  // Twice the last-level cache (the L3 as sysconf reports it; 32 MiB where it reports none).
  static size_t settle_bytes() {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return 2 * (l3 > 0 ? static_cast<size_t>(l3) : size_t{32} << 20);
  }
  // Reads settle_ once, line by line: the caches then hold its clean lines and none of the
  // buffers, and every dirty line an earlier call left has been written back, outside the
  // timing. Beyond the cache a call otherwise starts from whatever the batch before it left,
  // of either library: Open MPI's 16 MiB all_to_all moved by up to a third between launches
  // beside rankflow builds that differed only in how they stored their own block, one way in
  // one log and the other way in another (docs/performance.md, "Settled caches").
  // Every rank reads before any writes its input: the ranks share the L3, so one rank's read
  // must not evict the other's fresh input.
  void settle_caches() const {
    uint64_t sum = 0;
    for (size_t i = 0; i < settle_.size(); i += 64)
      sum += static_cast<uint64_t>(settle_[i]);
    asm volatile("" ::"r"(sum));
    MPI_Barrier(comm_.mpi_comm());
  }

  const Options& o_;
  Communicator& comm_;
  SymmetricBuffer arena_;
  static constexpr size_t kCopySkew = 33 * 64;  // cache-line aligned, not 4 KiB-aliased
  UserArrays user_;
  std::vector<std::byte> mpi_send_, mpi_recv_, copy_a_, copy_b_, settle_;
  // --buffers registered: declared after user_, so that it is deregistered before user_ frees
  // the memory it registers.
  RegisteredBuffer registration_;
  std::byte* send_ = nullptr;
  std::byte* recv_ = nullptr;
  std::vector<Row> rows_;
};

}  // namespace
}  // namespace rankflow::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    const rankflow::bench::Options options = rankflow::bench::parse_options(argc, argv);
    if (options.help) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) std::fputs(rankflow::bench::kUsage, stdout);
      MPI_Finalize();
      return 0;
    }
    rankflow::Communicator comm = rankflow::Communicator::from_mpi(MPI_COMM_WORLD);
    {
      rankflow::bench::Driver driver(options, comm);
      driver.run();
    }
    comm.close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rankflow-bench: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
