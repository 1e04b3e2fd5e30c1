// PartHandOff (see part_hand_off.h).
#include "collectives/part_hand_off.h"

#include <cstring>
#include <string>

#include "collectives/process_memory.h"
#include "rankflow/error.h"

namespace rankflow::coll {

namespace {

// Below, the system calls cost more than the peers' fetches save. On the Intel Xeon of
// 2026-12-03 a two-member 64 KiB call ran x2.01 of Open MPI handing off against x2.23 fetching,
// and 128 KiB x1.91 against x1.58 (five runs of each build, alternated), so it began at 128 KiB.
// On the AMD EPYC of 2026-12-04 evening, two members, 64 KiB: x1.95-1.98 handing off against
// x1.26-1.34 fetching in the slow mode (the peer's fetch reads across core complexes), x1.82-1.88
// against x1.84-1.86 in the fast one (eight launches of each build, alternated,
// docs/data/ab-amd-zen4-2026-12-04-evening/ho64.txt); twophase forced, handing off from 16 KiB
// (the amd-zen4 profile runs twophase from 16 KiB + 1 on two members): 32 KiB x1.86-2.09 in the
// fast mode and x1.84-2.03 in the slow one, 16 KiB x1.83-2.11 in all launches but one (x0.98),
// where the tables' onephase read x1.56-2.26 / x1.20-1.52 and x1.23-3.29 (twophase32k.txt,
// allreduce32k.txt).
// So two members hand off from 16 KiB: wherever twophase runs on plain buffers there (below,
// the tables run onephase; twophase only where forced). On more members each owner makes one
// kernel copy per peer of a part 1/P as long, not measured below 128 KiB: they keep it.
constexpr size_t kHandOffFrom = 128 * 1024;
constexpr size_t kTwoMemberHandOffFrom = 16 * 1024;

size_t hand_off_from(int members) {
  return members == 2 ? kTwoMemberHandOffFrom : kHandOffFrom;
}

}  // namespace

bool PartHandOff::fits(const CollContext& c, const AllreduceArgs& a, size_t segment) {
  const size_t smallest_part = segment / static_cast<size_t>(c.size());
  return a.src_ptr != nullptr && a.dst_ptr != nullptr && splits_evenly(a.count, segment) &&
         a.count * a.reducer->elem_size >= hand_off_from(c.size()) &&
         smallest_part * a.reducer->elem_size >= header_bytes(c.size());
}

PartHandOff::PartHandOff(CollContext& c, const AllreduceArgs& a, size_t segment, Offer offer)
    : c_(c), a_(a), segment_(segment), offer_(offer), published_(c.local(header_at(c.rank()))) {
  const Header mine{published_process(), reinterpret_cast<uint64_t>(a.dst_ptr),
                    reinterpret_cast<uint64_t>(a.src_ptr), offer};
  std::byte* header = c_.local(header_at(c_.rank()));
  std::memcpy(header, &mine, sizeof mine);
  // The writers' words, cleared before anyone may put into them (after the first kReady).
  std::memset(header + sizeof mine, 0, header_bytes(c_.size()) - sizeof mine);
}

size_t PartHandOff::header_at(int member) const {
  return a_.src + partition(segment_, c_.size(), member).begin * a_.reducer->elem_size;
}

void PartHandOff::learn_peers() {
  peers_.resize(static_cast<size_t>(c_.size()));
  for (int d = 1; d < c_.size(); ++d)
    peers_[c_.peer(d)] = c_.read_record<Header>(c_.peer(d), header_at(c_.peer(d)));
}

int PartHandOff::member_unlike_in_place() const {
  const bool in_place = a_.src_ptr == a_.dst_ptr;
  for (int d = 1; d < c_.size(); ++d) {
    const Header& peer = peers_[c_.peer(d)];
    if ((peer.send == peer.recv) != in_place) return c_.peer(d);
  }
  return -1;
}

void PartHandOff::throw_in_place_mismatch(int member) const {
  const bool in_place = a_.src_ptr == a_.dst_ptr;
  throw InvalidArgument("allreduce: rank " + std::to_string(c_.rank()) + " calls " +
                        (in_place ? "in place (send == recv)" : "out of place") + " but member " +
                        std::to_string(member) + " does not: a call is in place on every " +
                        "member or on none (as MPI_IN_PLACE)");
}

bool PartHandOff::everyone_offers(Offer offer) const {
  if (offer_ != offer) return false;
  for (int d = 1; d < c_.size(); ++d)
    if (peers_[c_.peer(d)].offer != offer) return false;
  return true;
}

bool PartHandOff::anyone_reads() const {
  if (offers_reads()) return true;
  for (int d = 1; d < c_.size(); ++d)
    if (peers_[c_.peer(d)].offer == Offer::kReads) return true;
  return false;
}

PartHandOff::PeerBuffers PartHandOff::buffers_of(int peer) const {
  const Header& header = peers_[peer];
  return {c_.is_process_of(peer, header.pid) ? header.pid : 0, header.send, header.recv};
}

void PartHandOff::say_part_missing() {
  said_part_missing_ = true;
  for (int d = 1; d < c_.size(); ++d) {
    const int p = c_.peer(d);
    c_.team().put(p, left_word_at(p, c_.rank()), &kPartMissing, sizeof kPartMissing);
  }
  c_.complete_fetches();
}

int PartHandOff::member_whose_part_is_missing() const {
  for (int d = 1; d < c_.size(); ++d) {
    uint64_t left = 0;
    std::memcpy(&left, c_.local(left_word_at(c_.rank(), c_.peer(d))), sizeof left);
    if (left == kPartMissing) return c_.peer(d);
  }
  return -1;
}

bool PartHandOff::write_into_recv(int peer, const std::byte* part, size_t bytes,
                                  size_t at_in_message) {
  const Header& header = peers_[peer];
  return c_.is_process_of(peer, header.pid) &&
         write_process_memory(header.pid, header.recv + at_in_message, part, bytes);
}

void PartHandOff::give(const AllreduceArgs& s, size_t index) {
  const size_t es = a_.reducer->elem_size;
  const Segment mine = partition(s.count, c_.size(), c_.rank());
  const size_t bytes = mine.count * es;
  const std::byte* part = s.dst_ptr + mine.begin * es;
  const uint64_t left = index + 1;  // put from here: alive until complete_fetches()
  bool put_any = false;
  for (int d = 1; d < c_.size(); ++d) {
    const int p = c_.peer(d);
    if (write_into_recv(p, part, bytes, (index * segment_ + mine.begin) * es)) continue;
    // Into that peer's window at this part (the peer has read what it staged there: this member
    // reduced it), and my word in its header says which segment it is.
    c_.team().put(p, s.dst + mine.begin * es, part, bytes);
    c_.team().put(p, left_word_at(p, c_.rank()), &left, sizeof left);
    put_any = true;
  }
  if (put_any) c_.complete_fetches();
}

void PartHandOff::take(const AllreduceArgs& s, size_t index) {
  const size_t es = a_.reducer->elem_size;
  for (int d = 1; d < c_.size(); ++d) {
    const int p = c_.peer(d);
    uint64_t left = 0;
    std::memcpy(&left, c_.local(left_word_at(c_.rank(), p)), sizeof left);
    if (left != index + 1) continue;
    const Segment part = partition(s.count, c_.size(), p);
    std::memcpy(s.dst_ptr + part.begin * es, c_.local(s.dst + part.begin * es), part.count * es);
  }
}

}  // namespace rankflow::coll
