// UserMemory (see user_memory.h): sharing the range's pages and registering it with UCX. Runs on
// the thread that uses the Context.
#include "transport/user_memory.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "transport/context.h"

namespace rankflow::transport {

UserMemory::UserMemory(ucp_context_h ucp, std::byte* base, size_t bytes, bool shared)
    : ucp_(ucp), base_(base), bytes_(bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  pages_begin_ = reinterpret_cast<uintptr_t>(base_) & ~(page - 1);
  pages_end_ = (reinterpret_cast<uintptr_t>(base_) + bytes_ + page - 1) & ~(page - 1);
  if (shared) {
    runs_ = SharedPageTable::instance().share(pages_begin_, pages_end_);
    return;
  }
  // UCX may hold these pages' physical memory: they must not move while it does.
  SharedPageTable::instance().pin(pages_begin_, pages_end_);
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = base_;
  params.length = bytes_;
  const ucs_status_t status = ucp_mem_map(ucp_, &params, &memh_);
  if (status != UCS_OK) {
    memh_ = nullptr;
    SharedPageTable::instance().unpin(pages_begin_, pages_end_);
    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<void*>(base_));
    check_ucs(status, "ucp_mem_map of " + std::to_string(bytes_) + " bytes at " + address);
  }
}

UserMemory::~UserMemory() {
  if (memh_ != nullptr) {
    ucp_mem_unmap(ucp_, memh_);
    SharedPageTable::instance().unpin(pages_begin_, pages_end_);
  }
  if (!runs_.empty()) SharedPageTable::instance().release(pages_begin_, pages_end_);
}

}  // namespace rankflow::transport
