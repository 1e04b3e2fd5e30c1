// stage_copy (see stage_copy.h).
#include "collectives/stage_copy.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace rankflow::coll {
namespace {

constexpr size_t kStreamFrom = 16 * 1024;  // below, the lines are few and memcpy is as fast
std::atomic<StageCopy> g_how{StageCopy::kTable};

#if defined(__x86_64__)
// 64 bytes a step with 16-byte non-temporal stores (SSE2: every x86-64 has them); `dst` is
// 16-byte aligned, `bytes` a multiple of 64.
void stream_aligned(std::byte* dst, const std::byte* src, size_t bytes) {
  auto* d = reinterpret_cast<__m128i*>(dst);
  const auto* s = reinterpret_cast<const __m128i*>(src);
  for (size_t i = 0; i < bytes / 64; ++i, d += 4, s += 4) {
    const __m128i a = _mm_loadu_si128(s);
    const __m128i b = _mm_loadu_si128(s + 1);
    const __m128i c = _mm_loadu_si128(s + 2);
    const __m128i e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  _mm_sfence();  // visible before the signal that follows
}
#endif

bool streams(bool entry_streams) {
  switch (g_how.load(std::memory_order_relaxed)) {
    case StageCopy::kMemcpy: return false;
    case StageCopy::kStream: return true;
    case StageCopy::kTable: break;
  }
  return entry_streams;
}

}  // namespace

void set_stage_copy(StageCopy how) {
  g_how.store(how, std::memory_order_relaxed);
}

void stream_copy(std::byte* dst, const std::byte* src, size_t bytes) {
#if defined(__x86_64__)
  if (bytes >= kStreamFrom) {
    const size_t head = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
    std::memcpy(dst, src, head);
    const size_t body = (bytes - head) / 64 * 64;
    stream_aligned(dst + head, src + head, body);
    std::memcpy(dst + head + body, src + head + body, bytes - head - body);
    return;
  }
#endif
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void stage_copy(std::byte* dst, const std::byte* src, size_t bytes, bool entry_streams) {
  if (streams(entry_streams)) {
    stream_copy(dst, src, bytes);
  } else if (bytes > 0) {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace rankflow::coll
