// StridedIndex (see strided_index.h) and the box arithmetic the tracker shares with it.
#include "runtime/strided_index.h"

#include <algorithm>
#include <utility>

namespace rankflow::runtime {

// A strided view's box in the coordinates of its layout: the index of its first element in
// every dimension, and the byte offset left below the innermost stride (the phase). Every byte
// position has one such representation when each dimension fits inside one step of the
// dimension above, so two views of one layout and phase share an element exactly when their
// boxes intersect. False when a dimension would wrap into the next (no box exists).
bool box_of(const ByteUse& u, size_t first[kMaxDims], size_t& phase) {
  const Layout& l = u.layout;
  size_t rest = u.begin;
  for (uint32_t d = 0; d < l.ndim; ++d) {
    first[d] = rest / l.stride[d];
    rest %= l.stride[d];
    if (d > 0 && (l.stride[d - 1] % l.stride[d] != 0 ||
                  first[d] + l.shape[d] > l.stride[d - 1] / l.stride[d])) {
      return false;
    }
  }
  phase = rest;
  return phase + l.element_bytes <= l.stride[l.ndim - 1];
}

bool same_layout(const Layout& a, const Layout& b) {
  if (a.ndim != b.ndim || a.element_bytes != b.element_bytes) return false;
  for (uint32_t d = 0; d < a.ndim; ++d) {
    if (a.stride[d] != b.stride[d]) return false;
  }
  return true;
}

bool covers(const ByteUse& write, const ByteUse& earlier) {
  return write.layout.ndim == 0 && write.begin <= earlier.begin && earlier.end <= write.end;
}

const StridedIndex::Group* StridedIndex::group_of(const ByteUse& use, size_t phase) const {
  for (const Group& g : groups_) {
    if (g.phase == phase && same_layout(g.layout, use.layout)) return &g;
  }
  return nullptr;
}

StridedIndex::Group* StridedIndex::group_of(const ByteUse& use, size_t phase) {
  return const_cast<Group*>(std::as_const(*this).group_of(use, phase));
}

StridedIndex::Group::Group(const Layout& l, size_t p, std::pmr::memory_resource* pool)
    : layout(l), phase(p) {
  dims.reserve(l.ndim);
  for (uint32_t d = 0; d < l.ndim; ++d)
    dims.emplace_back(pool);
}

// The dimension in which `use`'s candidate window covers the least of the group's span.
size_t StridedIndex::narrowest(const Group& g, const ByteUse& use) {
  size_t best = 0;
  double best_share = 2;
  for (uint32_t d = 0; d < g.layout.ndim; ++d) {
    const Dimension& dim = g.dims[d];
    const double window = static_cast<double>(use.layout.shape[d] + dim.longest());
    const double share = window / static_cast<double>(std::max<size_t>(dim.span, 1));
    if (share < best_share) {
      best_share = share;
      best = d;
    }
  }
  return best;
}

void StridedIndex::insert(Group& g, Entry entry) {
  const size_t slot = g.entries.size();
  const ByteUse& use = entry.record.use;
  entry.in_tree = 0;
  for (uint32_t d = 0; d < g.layout.ndim; ++d) {
    Dimension& dim = g.dims[d];
    if (dim.ordered.empty() || entry.first[d] >= dim.ordered.back().first) {
      dim.ordered.emplace_back(entry.first[d], slot);
    } else {
      entry.in_index[d] = dim.by_first.emplace(entry.first[d], slot);
      entry.in_tree |= static_cast<uint8_t>(1u << d);
    }
    ++dim.lengths[use.layout.shape[d]];
    dim.span = std::max(dim.span, entry.first[d] + use.layout.shape[d]);
  }
  g.lo = std::min(g.lo, use.begin);
  g.hi = std::max(g.hi, use.end);
  entry.live = true;
  ++g.live;
  g.entries.push_back(entry);
}

void StridedIndex::add(uint64_t task, const ByteUse& use) {
  Entry entry{{task, use}, {}, {}, 0, true};
  size_t phase = 0;
  if (!box_of(use, entry.first, phase)) {
    loose_.push_back({task, use});
    return;
  }
  Group* g = group_of(use, phase);
  if (g == nullptr) g = &groups_.emplace_back(use.layout, phase, pool_);
  insert(*g, entry);
}

// Drops dead entries (their slots shift, so the indices are rebuilt).
void StridedIndex::rebuild(Group& g) {
  Group fresh(g.layout, g.phase, pool_);
  for (Entry& e : g.entries) {
    if (e.live) insert(fresh, e);
  }
  g = std::move(fresh);
}

void StridedIndex::erase_covered_by(const ByteUse& write) {
  for (Group& g : groups_) {
    if (g.live == 0 || g.hi <= write.begin || write.end <= g.lo) continue;
    for (Entry& e : g.entries) {
      if (!e.live || !covers(write, e.record.use)) continue;
      for (uint32_t d = 0; d < g.layout.ndim; ++d) {
        Dimension& dim = g.dims[d];
        if (e.in_tree & (1u << d)) dim.by_first.erase(e.in_index[d]);
        const auto length = dim.lengths.find(e.record.use.layout.shape[d]);
        if (--length->second == 0) dim.lengths.erase(length);
      }
      e.live = false;
      --g.live;
    }
    if (g.entries.size() > 2 * g.live + 64) rebuild(g);
  }
  std::erase_if(groups_, [](const Group& g) { return g.live == 0; });
  std::erase_if(loose_, [&](const UseRecord& r) { return covers(write, r.use); });
}

}  // namespace rankflow::runtime
