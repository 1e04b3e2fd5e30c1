// Bad input to task_arg.h and domain.h (issue 12): one table each (bad_input_worker.h says how
// their cases run; main() is in bad_input_runtime_test.cpp). Domains here are over chip 0, with
// one 256-byte buffer "a" in a 4096-byte window.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bad_input_worker.h"
#include "rankflow/domain.h"
#include "rankflow/error.h"
#include "rankflow/runtime.h"
#include "rankflow/task_arg.h"

namespace rankflow::test {
namespace {

using E = ErrorCode;

Domain domain_d(Orchestrator& o) {
  return o.allocate_domain("d", {0}, 4096, {{"a", 256}});
}
Domain released_d(Orchestrator& o) {
  Domain d = domain_d(o);
  d.release();
  return d;
}
// `n` scalar arguments.
std::vector<TaskArg> scalars(size_t n) {
  std::vector<TaskArg> args;
  for (size_t i = 0; i < n; ++i)
    args.push_back(scalar(static_cast<int>(i)));
  return args;
}

TEST(BadInput, TaskArgH) {
  const std::string not_of_run =
      "argument 0 is not a tensor of this run (create it with host_tensor or alloc, or name a live "
      "buffer of Worker::create_buffer; an alloc intermediate made in a scope dies at the scope's "
      "end)";
  struct Wide {
    double a, b;
  };
  struct Nine {
    char bytes[9];
  };
  const std::vector<DagCase> table = {
      on_every_rank("a scalar of 16 bytes", E::kInvalidArgument,
                    {"rankflow::scalar: a value of 16 bytes; scalars carry at most 8 (pass a "
                     "tensor instead)"},
                    [] {
                      scalar(Wide{1, 2});
                    }),
      on_every_rank("a scalar of 9 bytes", E::kInvalidArgument,
                    {"rankflow::scalar: a value of 9 bytes"}, [] { scalar(Nine{}); }),
      // The limits of one task.
      in_body("257 tensor arguments", E::kInvalidArgument,
              {"task 'noop': 257 tensor and domain arguments, at most 256"},
              [](Orchestrator& o) {
                o.submit(g_k.noop, std::vector<TaskArg>(257, in(o.host_tensor<float>({1}))), 0);
              }),
      in_body("129 scalars", E::kInvalidArgument,
              {"task 'noop': 129 scalar arguments, at most 128"},
              [](Orchestrator& o) { o.submit(g_k.noop, scalars(129), 0); }),
      in_body("257 tensor arguments of a sub", E::kInvalidArgument,
              {"task 'noop_sub': 257 tensor and domain arguments, at most 256"},
              [](Orchestrator& o) {
                o.submit_sub(g_k.noop_sub,
                             std::vector<TaskArg>(257, no_dep(o.host_tensor<float>({1}))));
              }),
      in_body("129 scalars of a group member", E::kInvalidArgument,
              {"task 'noop': 129 scalar arguments, at most 128"},
              [](Orchestrator& o) { o.submit_group(g_k.noop, {scalars(129)}, {0}); }),
      // Access tags: what one task writes, no other of its arguments may touch.
      in_body("two outputs that overlap", E::kInvalidArgument,
              {"task 'noop': arguments 0 and 1 are both written and overlap"},
              [](Orchestrator& o) {
                auto x = o.host_tensor<float>({4, 4});
                o.submit(g_k.noop, {out(x), out(x.rows(2, 2))}, 0);
              }),
      in_body("an input that an output overlaps", E::kInvalidArgument,
              {"task 'noop': argument 0 reads bytes that argument 1 writes; pass the range once as "
               "inout"},
              [](Orchestrator& o) {
                auto x = o.host_tensor<float>({4});
                o.submit(g_k.noop, {in(x), out(x)}, 0);
              }),
      in_body("an output, then an input of the same bytes", E::kInvalidArgument,
              {"task 'noop': argument 1 reads bytes that argument 0 writes"},
              [](Orchestrator& o) {
                auto x = o.host_tensor<float>({4});
                o.submit(g_k.noop, {out_existing(x), in(x.rows(1, 1))}, 0);
              }),
      in_body("inout and out_existing that overlap", E::kInvalidArgument,
              {"task 'noop': arguments 0 and 1 are both written and overlap"},
              [](Orchestrator& o) {
                auto x = o.host_tensor<float>({8});
                o.submit(g_k.noop, {inout(x.rows(0, 5)), out_existing(x.rows(4, 4))}, 0);
              }),
      in_body("positions count tensor arguments only", E::kInvalidArgument,
              {"task 'noop': argument 1 reads bytes that argument 2 writes"},
              [](Orchestrator& o) {
                auto x = o.host_tensor<float>({4}), y = o.host_tensor<float>({4});
                o.submit(g_k.noop, {scalar(1), no_dep(y), in(x), scalar(2), out(x.rows(0, 1))}, 0);
              }),
      in_body("strided outputs that overlap", E::kInvalidArgument,
              {"task 'noop': arguments 0 and 1 are both written and overlap"},
              [](Orchestrator& o) {
                auto x = o.host_tensor<float>({4, 4});
                o.submit(g_k.noop, {out(x.slice(1, 0, 3)), out(x.slice(1, 2, 4))}, 0);
              }),
      in_body(
          "group members that write the same bytes", E::kInvalidArgument,
          {"task 'noop': member 0's argument 0 and member 1's argument 0 are both written "
           "and overlap"},
          [](Orchestrator& o) {
            auto x = o.host_tensor<float>({4});
            o.submit_group(g_k.noop, {{out(x)}, {out(x)}}, {0, 1});
          },
          2),
      in_body(
          "a group member that reads what another writes", E::kInvalidArgument,
          {"task 'noop': member 1's argument 1 reads bytes that member 0's argument 0 writes"},
          [](Orchestrator& o) {
            auto x = o.host_tensor<float>({4}), y = o.host_tensor<float>({4});
            o.submit_group(g_k.noop, {{out(x)}, {in(y), in(x.rows(3, 1))}}, {0, 1});
          },
          2),
      // Tensors of this run.
      in_body("an empty tensor", E::kInvalidArgument, {"task 'noop': " + not_of_run},
              [](Orchestrator& o) { o.submit(g_k.noop, {in(Tensor())}, 0); }),
      in_body("an empty tensor after a scalar", E::kInvalidArgument, {"task 'noop': " + not_of_run},
              [](Orchestrator& o) {
                o.submit(g_k.noop, {scalar(1.5), out(Tensor())}, 0);
              }),
      in_body("an empty tensor passed without dependencies", E::kInvalidArgument,
              {"task 'noop': " + not_of_run},
              [](Orchestrator& o) { o.submit(g_k.noop, {no_dep(Tensor())}, 0); }),
      in_body("an empty tensor to a sub", E::kInvalidArgument, {"task 'noop_sub': " + not_of_run},
              [](Orchestrator& o) { o.submit_sub(g_k.noop_sub, {inout(Tensor())}); }),
      on_host("a tensor of an earlier run", E::kInvalidArgument, {"task 'noop': " + not_of_run},
              [] {
                Tensor old;
                g_worker->run([&](Orchestrator& o) { old = o.host_tensor<float>({4}); });
                g_worker->run([&](Orchestrator& o) { o.submit(g_k.noop, {in(old)}, 0); });
              }),
      // Domain arguments: a live domain of this run, to a member chip.
      on_every_rank("domain_arg of an empty Domain", E::kInvalidState,
                    {"Domain::domain_arg: an empty handle"}, [] { domain_arg(Domain()); }),
      in_body("domain_arg of a released domain", E::kInvalidState,
              {"Domain::domain_arg: domain 'd' was released"},
              [](Orchestrator& o) { domain_arg(released_d(o)); }),
      in_body("a domain argument with an empty Domain", E::kInvalidArgument,
              {"task 'noop': argument 0 is an empty Domain handle"},
              [](Orchestrator& o) {
                TaskArg a;
                a.kind = ArgKind::kDomain;
                o.submit(g_k.noop, {a}, 0);
              }),
      in_body("a domain argument to a sub", E::kInvalidArgument,
              {"task 'noop_sub': argument 0 (domain 'd'): the host is not a member; use a chip "
               "task"},
              [](Orchestrator& o) { o.submit_sub(g_k.noop_sub, {domain_arg(domain_d(o))}); }),
      in_body(
          "a domain argument to a chip that is not a member", E::kInvalidArgument,
          {"task 'noop': argument 1 (domain 'd'): chip worker 1 is not a member"},
          [](Orchestrator& o) {
            const TaskArg d = domain_arg(domain_d(o));
            o.submit(g_k.noop, {scalar(7), in(o.host_tensor<float>({1})), d}, 1);
          },
          2),
      in_body("a domain argument released after it was made", E::kInvalidState,
              {"task 'noop': argument 0 (domain 'd') was released; a domain lives for the run "
               "that allocated it"},
              [](Orchestrator& o) {
                Domain d = domain_d(o);
                const TaskArg a = domain_arg(d);
                d.release();
                o.submit(g_k.noop, {a}, 0);
              }),
      on_host("a domain argument of an earlier run", E::kInvalidState,
              {"task 'noop': argument 0 (domain 'd') was released"},
              [] {
                TaskArg kept;
                g_worker->run([&](Orchestrator& o) { kept = domain_arg(domain_d(o)); });
                g_worker->run([&](Orchestrator& o) { o.submit(g_k.noop, {kept}, 0); });
              }),
  };
  run_dag_table(table);
}

TEST(BadInput, DomainH) {
  const int chips = g_worker->chips();
  const std::string no_worker = "does not exist; chip workers are 0.." + std::to_string(chips - 1);
  const std::string gone = "domain 'd' was released (a domain lives for the run that allocated it)";
  const std::string long_name(48, 'n'), what = "allocate_domain('d'): ";
  const auto in_domain = [](Orchestrator& o, const TaskArg& p) {
    o.submit(g_k.probe, {p, domain_arg(domain_d(o))}, 0);
  };
  std::vector<BufferSpec> seventeen;
  for (int i = 0; i < 17; ++i)
    seventeen.push_back({"b" + std::to_string(i), 8});
  const auto empty = [](const char* op, auto call) {
    return on_every_rank(std::string("Domain::") + op + " of an empty handle", E::kInvalidState,
                         {std::string("Domain::") + op + ": an empty handle"}, call);
  };
  const auto allocate = [](std::string name, std::vector<std::string> substrings, auto call) {
    return in_body(std::move(name), E::kInvalidArgument, std::move(substrings), call);
  };
  const std::vector<DagCase> table = {
      // The handle: empty, released, of an earlier run; members and buffers.
      empty("name", [] { Domain().name(); }),
      empty("workers", [] { Domain().workers(); }),
      empty("size", [] { Domain().size(); }),
      empty("window_bytes", [] { Domain().window_bytes(); }),
      empty("rank_of", [] { Domain().rank_of(0); }),
      empty("buffer_offset", [] { Domain().buffer_offset("a"); }),
      empty("release", [] { Domain().release(); }),
      in_body("name of a released domain", E::kInvalidState, {"Domain::name: " + gone},
              [](Orchestrator& o) { released_d(o).name(); }),
      in_body("rank_of of a released domain", E::kInvalidState, {"Domain::rank_of: " + gone},
              [](Orchestrator& o) { released_d(o).rank_of(0); }),
      in_body("buffer_offset of a released domain", E::kInvalidState,
              {"Domain::buffer_offset: " + gone},
              [](Orchestrator& o) { released_d(o).buffer_offset("a"); }),
      in_body("size of a released domain", E::kInvalidState, {"Domain::size: " + gone},
              [](Orchestrator& o) { released_d(o).size(); }),
      in_body("release twice", E::kInvalidState, {"Domain::release: " + gone},
              [](Orchestrator& o) { released_d(o).release(); }),
      on_host("window_bytes of a domain of an earlier run", E::kInvalidState,
              {"Domain::window_bytes: " + gone},
              [] {
                Domain kept;
                g_worker->run([&](Orchestrator& o) { kept = domain_d(o); });
                g_worker->run([&](Orchestrator&) { kept.window_bytes(); });
              }),
      in_body("rank_of a chip that is not a member", E::kInvalidArgument,
              {"domain 'd': chip worker 5 is not a member"},
              [](Orchestrator& o) { domain_d(o).rank_of(5); }),
      in_body("rank_of worker -1", E::kInvalidArgument,
              {"domain 'd': chip worker -1 is not a member"},
              [](Orchestrator& o) { domain_d(o).rank_of(-1); }),
      in_body("buffer_offset of a missing buffer", E::kInvalidArgument,
              {"domain 'd' has no buffer 'missing'"},
              [](Orchestrator& o) { domain_d(o).buffer_offset("missing"); }),
      // allocate_domain: every argument checked before anything happens.
      allocate("allocate_domain without a name", {"allocate_domain(''): a name of 1 to 47"},
               [](Orchestrator& o) { o.allocate_domain("", {0}, 4096); }),
      allocate("allocate_domain with a 48-character name",
               {"allocate_domain('" + long_name + "'): a name of 1 to 47 characters"},
               [long_name](Orchestrator& o) { o.allocate_domain(long_name, {0}, 4096); }),
      allocate("allocate_domain without workers", {what + "needs 1 to 64 workers, got 0"},
               [](Orchestrator& o) { o.allocate_domain("d", {}, 4096); }),
      allocate("allocate_domain of 65 workers", {what + "needs 1 to 64 workers, got 65"},
               [](Orchestrator& o) { o.allocate_domain("d", std::vector<int>(65, 0), 4096); }),
      allocate("allocate_domain on a worker past the last",
               {what + "worker " + std::to_string(chips) + " " + no_worker},
               [chips](Orchestrator& o) {
                 o.allocate_domain("d", {0, chips}, 4096);
               }),
      allocate("allocate_domain on worker -1", {what + "worker -1 " + no_worker},
               [](Orchestrator& o) { o.allocate_domain("d", {-1}, 4096); }),
      allocate("allocate_domain with a worker twice", {what + "worker 0 appears twice"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0, 0}, 4096);
               }),
      allocate("allocate_domain with no window", {what + "window_bytes must be positive"},
               [](Orchestrator& o) { o.allocate_domain("d", {0}, 0); }),
      allocate("allocate_domain with a window larger than any",
               {what + "window_bytes 1125899906842624 is more than a window holds "
                       "(281474976710656)"},
               [](Orchestrator& o) { o.allocate_domain("d", {0}, size_t{1} << 50); }),
      allocate("allocate_domain with 17 buffers", {what + "at most 16 buffers"},
               [seventeen](Orchestrator& o) { o.allocate_domain("d", {0}, 4096, seventeen); }),
      allocate("allocate_domain with an unnamed buffer",
               {what + "buffer name '' (1 to 47 characters, none of them NUL)"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"", 8}});
               }),
      allocate("allocate_domain with a 48-character buffer name",
               {what + "buffer name '" + long_name + "' (1 to 47 characters, none of them NUL)"},
               [long_name](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{long_name, 8}});
               }),
      allocate("allocate_domain with the rest-of-window name",
               {what + "buffer name 'rankflow.rest' is reserved"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"rankflow.rest", 8}});
               }),
      allocate("allocate_domain with the collectives' inbox name",
               {what + "buffer name 'rankflow.inbox' is reserved",
                "names starting 'rankflow.' are rankflow's own"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"rankflow.inbox", 8}});
               }),
      allocate("allocate_domain with a buffer twice", {what + "buffer 'a' appears twice"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"a", 64}, {"a", 64}});
               }),
      allocate("allocate_domain with alignment 3",
               {what + "buffer 'a' needs a power-of-two alignment up to 4096 (got 3)"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"a", 64, 3}});
               }),
      allocate("allocate_domain with alignment 0",
               {what + "buffer 'a' needs a power-of-two", "(got 0)"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"a", 64, 0}});
               }),
      allocate("allocate_domain with alignment 8192",
               {what + "buffer 'a' needs a power-of-two alignment up to 4096 (got 8192)"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 1 << 16, {{"a", 64, 8192}});
               }),
      allocate("allocate_domain with a buffer larger than the window",
               {what + "the buffers need 8192 bytes, more than the window's 4096"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"a", 8192}});
               }),
      allocate("allocate_domain with buffers larger than the window together",
               {what + "the buffers need 4200 bytes, more than the window's 4096"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"a", 4000}, {"b", 200}});  // packed
               }),
      allocate("allocate_domain with aligned buffers larger than the window together",
               {what + "the buffers need 4232 bytes, more than the window's 4096"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"a", 4000}, {"b", 200, 64}});
               }),
      allocate("allocate_domain with buffers whose sum wraps around",
               {what + "buffer 'b' needs " + std::to_string(SIZE_MAX) +
                " bytes, more than the window's 4096"},
               [](Orchestrator& o) {
                 o.allocate_domain("d", {0}, 4096, {{"a", 64}, {"b", SIZE_MAX}});
               }),
      allocate("allocate_domain of a name that is live", {what + "a domain of that name is live"},
               [](Orchestrator& o) {
                 domain_d(o);
                 domain_d(o);
               }),
      in_body("allocate_domain after a submit", E::kInvalidState,
              {"allocate_domain('d'): domains come before the run's first submit"},
              [](Orchestrator& o) {
                o.submit(g_k.noop, {}, 0);
                domain_d(o);
              }),
      // What a member's kernel sees (DomainContext): buffers, its Team and Communicator.
      in_task(
          "DomainContext::buffer of a missing buffer", E::kInvalidArgument,
          {"team has no buffer named 'missing'; buffers: a, "},
          [](TaskContext& t) { t.domain(0).buffer("missing"); }, in_domain),
      in_task(
          "DomainContext::buffer_as of a missing buffer", E::kInvalidArgument,
          {"team has no buffer named 'b'"},
          [](TaskContext& t) { t.domain(0).buffer_as<float>("b"); }, in_domain),
      in_task(
          "the domain's Team put to a non-member", E::kInvalidArgument,
          {"put: ", "peer 1 is not a member; valid peers are 0..0"},
          [](TaskContext& t) {
            const char byte = 1;
            t.domain(0).team().put(1, 0, &byte, 1);
          },
          in_domain),
      in_task(
          "the domain's Team get past the window", E::kOutOfBounds,
          {"get: ", "exceeds the peer's window size"},
          [](TaskContext& t) {
            char byte = 0;
            auto& team = t.domain(0).team();
            team.get(0, team.window_bytes(), &byte, 1);
          },
          in_domain),
      in_task(
          "the domain's Communicator broadcast from a non-member", E::kInvalidArgument,
          {"broadcast: root 1 is not a member; valid roots are 0..0"},
          [](TaskContext& t) {
            float x = 0;
            t.domain(0).communicator().broadcast(&x, 1, DType::kF32, 1);
          },
          in_domain),
  };
  run_dag_table(table);
}

}  // namespace
}  // namespace rankflow::test
