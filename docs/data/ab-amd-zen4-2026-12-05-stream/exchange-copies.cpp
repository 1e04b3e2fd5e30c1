// The floor of a two-process allgather of plain (private) buffers, without rankflow or MPI: two
// processes pinned to cores 0 and 1, each with a send block of B bytes and a recv of 2B, flags in
// a shared page. Each iteration writes fresh input (one store a line, untimed), then times:
//   variant 0: copy the own block with memcpy, then read the peer's block with one
//              process_vm_readv (what rankflow's cross_memory and Open MPI's two-process
//              allgather do);
//   variant 1: staged through shared memory in chunks (stage chunk k+1 and copy it into the own
//              block, then copy the peer's chunk k out of its staging), the pipelined shape;
//   variant 2: as 1, the own block copied after the exchange;
//   variant 3: as 0, the own block copied with non-temporal stores;
//   variant 4: per CHUNK, process_vm_writev of my block's chunk into the peer's recv, then memcpy
//              of the same chunk into my own block while it is in cache (added 2026-12-06 for the
//              allgather's kept block, docs/data/ab-intel-emr-2026-12-06-kept/);
//   variant 5: as 4, the own copy first, the write from the own block;
//   variant 6: as 4, the own copy from another source (an all_to_all's blocks differ);
//   variant 7: as 4, the own copy with non-temporal stores.
// NOFRESH=1: the input is not rewritten between iterations.
// Median of the iterations, rank 0's view. g++ -O2 -std=c++20 -mavx2 exchange-copies.cpp -o ex;
// ./ex BLOCK VARIANT [CHUNK]
#include <sys/uio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sched.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <sys/wait.h>
#include <immintrin.h>
using clk = std::chrono::steady_clock;
struct alignas(64) Flag { std::atomic<long> v; char pad[56]; };
struct Shared { Flag ready[2]; Flag done[2]; void* send[2]; void* recv[2]; pid_t pid[2]; };
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static void waitfor(std::atomic<long>& a, long v){ while(a.load(std::memory_order_acquire)<v) _mm_pause(); }
static void ntcopy(char* d, const char* s, size_t n){
  size_t head=(32-((uintptr_t)d%32))%32; memcpy(d,s,head); d+=head; s+=head; n-=head;
  size_t body=n/128*128;
  for(size_t i=0;i<body;i+=128){ __m256i a=_mm256_loadu_si256((const __m256i*)(s+i)),b=_mm256_loadu_si256((const __m256i*)(s+i+32)),c=_mm256_loadu_si256((const __m256i*)(s+i+64)),e=_mm256_loadu_si256((const __m256i*)(s+i+96));
    _mm256_stream_si256((__m256i*)(d+i),a);_mm256_stream_si256((__m256i*)(d+i+32),b);_mm256_stream_si256((__m256i*)(d+i+64),c);_mm256_stream_si256((__m256i*)(d+i+96),e);}
  _mm_sfence(); memcpy(d+body,s+body,n-body);}
int main(int argc,char**argv){
  size_t B = strtoull(argv[1],0,0); int variant = atoi(argv[2]); int iters = B>=4194304? 40: 300;
  size_t chunk = argc>3? strtoull(argv[3],0,0) : B;
  auto* sh = (Shared*)mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  char* stage = (char*)mmap(0,2*B+8192,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  memset(stage,1,2*B);
  int me = fork()==0 ? 1 : 0; int peer = 1-me;
  pin(me);
  std::vector<char> send(B, 7), recv(2*B), other_src(variant == 6 ? B : 0, 5);
  sh->send[me] = send.data(); sh->recv[me] = recv.data(); sh->pid[me] = getpid(); const bool fresh = getenv("NOFRESH") == nullptr;
  while(!sh->pid[peer]) ;
  char* mystage = stage + me*B; char* peerstage = stage + peer*B;
  std::vector<double> t;
  for(int i=1;i<=iters;i++){
    if(fresh) for(size_t k=0;k<B;k+=64) send[k]=(char)i; // fresh input
    // barrier-ish start
    sh->done[me].v.store(2*i-1, std::memory_order_release); waitfor(sh->done[peer].v, 2*i-1);
    auto t0=clk::now();
    char* own = recv.data()+me*B; char* other = recv.data()+peer*B;
    if(variant>=4&&variant<=7){ // push the own block to the peer chunk by chunk, own copy from L2
      sh->ready[me].v.store(i, std::memory_order_release);
      waitfor(sh->ready[peer].v, i);
      char* theirs = (char*)sh->recv[peer] + me*B;
      for(size_t first=0; first<B; first+=chunk){ size_t len=std::min(chunk,B-first);
        iovec l{send.data()+first,len}, r{theirs+first,len};
        if(variant==7){ process_vm_writev(sh->pid[peer],&l,1,&r,1,0); ntcopy(own+first, send.data()+first, len); }
        else if(variant==4){ process_vm_writev(sh->pid[peer],&l,1,&r,1,0); memcpy(own+first, send.data()+first, len); }
        else if(variant==6){ process_vm_writev(sh->pid[peer],&l,1,&r,1,0); memcpy(own+first, other_src.data()+first, len); }
        else { memcpy(own+first, send.data()+first, len); iovec l2{own+first,len}; process_vm_writev(sh->pid[peer],&l2,1,&r,1,0); }
      }
    } else if(variant==0||variant==3){ // CMA read; 3: local copy with NT stores
      if(variant==0) memcpy(own, send.data(), B); else ntcopy(own, send.data(), B);
      sh->ready[me].v.store(i, std::memory_order_release);
      waitfor(sh->ready[peer].v, i);
      iovec l{other,B}, r{sh->send[peer],B}; process_vm_readv(sh->pid[peer],&l,1,&r,1,0);
    } else { // staged, chunked pipeline
      long base = (long)i*100000;
      size_t staged=0; long n=0;
      auto stage_next=[&]{ size_t len=std::min(chunk,B-staged);
        memcpy(mystage+staged, send.data()+staged, len);
        if(variant==1) memcpy(own+staged, send.data()+staged, len);
        staged+=len; ++n; sh->ready[me].v.store(base+n, std::memory_order_release); };
      stage_next(); long k=0;
      for(size_t first=0; first<B; first+=chunk){
        if(staged<B) stage_next();
        size_t len=std::min(chunk,B-first); ++k;
        waitfor(sh->ready[peer].v, base+k);
        memcpy(other+first, peerstage+first, len);
      }
      if(variant==2) memcpy(own, send.data(), B); // local copy last
    }
    sh->done[me].v.store(2*i, std::memory_order_release); waitfor(sh->done[peer].v, 2*i);
    t.push_back(std::chrono::duration<double,std::micro>(clk::now()-t0).count());
  }
  std::sort(t.begin(),t.end());
  if(me==0){ printf("B=%zu variant=%d chunk=%zu: %.2f us\n", B, variant, chunk, t[t.size()/2]); waitpid(-1,0,0);} 
}
