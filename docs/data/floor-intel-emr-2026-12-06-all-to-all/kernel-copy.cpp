// One process on core 0: the same copy of N bytes from a hot source by memcpy, rep movsb,
// non-temporal stores and process_vm_writev to itself (the kernel's cross-memory copy), into a
// destination still in cache (dst warm) or after 64 MiB was read (dst cold, the source rewritten).
// Median of 21. g++ -O2 -mavx2 kernel-copy.cpp -o kc; ./kc BYTES
#include "../ab-intel-emr-2026-12-06-streamed/floor-common.h"
static void repmovsb(void* d, const void* s, size_t n) { asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory"); }
int main(int argc, char** argv) {
  size_t n = strtoull(argv[1], 0, 0);
  pin(0);
  std::vector<char> a(n + 4096, 1), b(n + 4096, 2), c(64 << 20, 3);
  char* s = a.data() + 64 - (uintptr_t)a.data() % 64; char* d = b.data() + 64 - (uintptr_t)b.data() % 64 + 33*64;
  for (std::string v : {"memcpy", "repmovsb", "nt", "kwself", "memcpy", "repmovsb", "nt", "kwself"}) for (int cold = 0; cold < 2; ++cold) {
    std::vector<double> t;
    for (int i = 0; i < 21; ++i) {
      if (cold) { long sum = 0; for (size_t k = 0; k < c.size(); k += 64) sum += c[k]; asm volatile("" :: "r"(sum)); for (size_t k = 0; k < n; k += 64) s[k]++; }
      auto t0 = clk::now();
      if (v == "memcpy") memcpy(d, s, n); else if (v == "repmovsb") repmovsb(d, s, n); else if (v == "nt") ntcopy(d, s, n); else writev(getpid(), d, s, n);
      t.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    printf("%zu %-9s %s: %.0f us %.1f GB/s\n", n, v.c_str(), cold ? "dst cold" : "dst warm", t[10], n / t[10] / 1e3);
  }
}
