// The fiber scheduler behind simt.h. One block at a time: every thread of it is a fiber with its own stack; the
// scheduler runs them in thread order, each until it reaches a synchronisation point or ends, and releases a
// point when every thread it waits for has reached it.
#include "testing/simt.h"

#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace simt {
namespace {

constexpr size_t kStack = 256 * 1024; // a kernel's register arrays live on its fiber's stack

enum class Wait { None, Block, Warp, Done };

struct Fiber {
    ucontext_t ctx{}; // only to enter the fiber's stack the first time
    jmp_buf jb;       // where it resumes: switches are _setjmp/_longjmp (no signal-mask system call)
    bool started = false;
    char* stack = nullptr;
    uint3 threadIdx{}, blockIdx{};
    int linear = 0;
    Wait wait = Wait::None;
    char const* op = nullptr; // the warp collective it waits in
    unsigned mask = 0;
    uint64_t in = 0;
    uint64_t out[32] = {};
};

struct Block {
    std::vector<Fiber> fibers;
    ucontext_t sched{};
    jmp_buf schedJb;
    int current = -1;
    std::function<void()> const* body = nullptr;
    std::string error; // set by a fiber that detected misuse; the scheduler throws it
};

Block* gBlock = nullptr;
void* gDynamicSmem = nullptr; // this launch's extern __shared__ bytes
std::mutex gRunning;          // one emulated launch at a time (fibers share the static __shared__ of the kernels)

Fiber& me() {
    return gBlock->fibers[gBlock->current];
}

void yieldToScheduler() {
    Fiber& f = me();
    if (_setjmp(f.jb) == 0) {
        _longjmp(gBlock->schedJb, 1);
    }
}

void fiberMain() {
    // First entry (through swapcontext): note where to resume, hand back, and run when resumed. A fiber serves
    // every block of its launch: entering a fresh context per block cost two signal-mask system calls per
    // thread and block (getcontext, swapcontext), about half of a simt test's time.
    yieldToScheduler();
    for (;;) {
        (*gBlock->body)();
        me().wait = Wait::Done;
        yieldToScheduler(); // resumed by the launch's next block
    }
}

// A kernel that faults (a wild index far past a static __shared__ array) is named before the process dies: block
// and thread of the fiber that ran, on stderr as "simt: ...". The default action follows (the handler is reset,
// the access faults again), so the exit status is still the signal's.
void reportFault(int sig) {
    char msg[256];
    int n = 0;
    if (gBlock != nullptr && gBlock->current >= 0) {
        Fiber const& f = gBlock->fibers[gBlock->current];
        n = std::snprintf(
            msg, sizeof msg,
            "simt: signal %d in a kernel: block (%u,%u,%u) thread (%u,%u,%u) (an out-of-bounds access?)\n", sig,
            f.blockIdx.x, f.blockIdx.y, f.blockIdx.z, f.threadIdx.x, f.threadIdx.y, f.threadIdx.z);
    }
    if (n > 0) {
        ssize_t const w = write(2, msg, static_cast<size_t>(n));
        (void)w;
    }
}

void installFaultReport() {
    static std::once_flag once;
    std::call_once(once, [] {
        static char altStack[64 * 1024]; // a fault that overflowed a fiber's stack still has a stack to report from
        stack_t ss{};
        ss.ss_sp = altStack;
        ss.ss_size = sizeof altStack;
        sigaltstack(&ss, nullptr);
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE}) {
            struct sigaction old {};
            sigaction(sig, nullptr, &old);
            if (old.sa_handler != SIG_DFL) {
                continue; // a sanitizer's own handler stays
            }
            struct sigaction sa {};
            sa.sa_handler = reportFault;
            sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
            sigemptyset(&sa.sa_mask);
            sigaction(sig, &sa, nullptr);
        }
    });
}

// The block (one count over every launch) whose values a static __shared__ variable holds; a variable first
// reached in another block is poisoned with its guard, as a device's shared memory is not initialised per block.
uint64_t gBlockSerial = 0;
struct SharedRecord {
    uint64_t block = 0;
    size_t bytes = 0;
    char const* name = nullptr;
};
std::map<void*, SharedRecord> gShared;

// "(x,y,z)": a block or thread index.
std::string xyz(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

// Throws when a guard of this block's shared memory has a byte overwritten: behind the dynamic part (dyn, bytes)
// and behind each static __shared__ variable the block reached.
void checkSharedGuards(uint3 b, unsigned char* dyn, size_t dynBytes) {
    auto check = [&](unsigned char* g, size_t bytes, char const* what, char const* name) {
        size_t const i = firstUnpoisoned(g, kSharedGuard);
        if (i < kSharedGuard) {
            std::memset(g, 0xCD, kSharedGuard); // report once
            throw std::runtime_error("simt: block " + xyz(b) + " wrote past the end of " + what + name + " (" +
                                     std::to_string(bytes) + " bytes; first at byte " + std::to_string(bytes + i) +
                                     ")");
        }
    };
    check(dyn + dynBytes, dynBytes, "the dynamic shared memory", "");
    for (auto& [p, rec] : gShared) {
        if (rec.block == gBlockSerial) {
            check(static_cast<unsigned char*>(p) + rec.bytes, rec.bytes, "__shared__ ", rec.name);
        }
    }
}

// Runs fiber i until it waits or ends.
void resume(Block& blk, int i) {
    Fiber& f = blk.fibers[i];
    blk.current = i;
    threadIdx = f.threadIdx;
    blockIdx = f.blockIdx;
    if (_setjmp(blk.schedJb) != 0) {
        return; // the fiber handed back
    }
    if (!f.started) {
        f.started = true;
        swapcontext(&blk.sched, &f.ctx); // returns through the longjmp above, never here
    }
    _longjmp(f.jb, 1);
}

// Releases whatever point is complete. Returns whether something was released.
bool release(Block& blk) {
    int const n = static_cast<int>(blk.fibers.size());
    bool released = false;
    // Warps: all 32 lanes waiting in the same collective.
    for (int w = 0; w * 32 < n; ++w) {
        int const lo = w * 32, hi = std::min(n, lo + 32);
        bool all = true;
        for (int i = lo; i < hi; ++i) {
            all = all && blk.fibers[i].wait == Wait::Warp;
        }
        if (!all) {
            continue;
        }
        Fiber const& f0 = blk.fibers[lo];
        for (int i = lo; i < hi; ++i) {
            Fiber const& f = blk.fibers[i];
            if (std::strcmp(f.op, f0.op) != 0 || f.mask != f0.mask) {
                blk.error = "block " + xyz(f0.blockIdx) + ": warp " + std::to_string(w) +
                            " lanes at different collectives: lane 0 in " + f0.op + ", lane " + std::to_string(i - lo) +
                            " in " + f.op;
                return false;
            }
        }
        if (hi - lo != 32 || f0.mask != 0xFFFFFFFFu) {
            blk.error = "block " + xyz(f0.blockIdx) + ": warp " + std::to_string(w) + " " + f0.op +
                        " with a partial warp or mask (simt supports the full mask of a full warp only)";
            return false;
        }
        uint64_t all32[32];
        for (int i = lo; i < hi; ++i) {
            all32[i - lo] = blk.fibers[i].in;
        }
        for (int i = lo; i < hi; ++i) {
            std::memcpy(blk.fibers[i].out, all32, sizeof(all32));
            blk.fibers[i].wait = Wait::None;
        }
        released = true;
    }
    // The block barrier: every thread not yet done waits in it.
    bool allAtBarrier = true, anyAtBarrier = false;
    for (Fiber const& f : blk.fibers) {
        allAtBarrier = allAtBarrier && (f.wait == Wait::Block || f.wait == Wait::Done);
        anyAtBarrier = anyAtBarrier || f.wait == Wait::Block;
    }
    if (allAtBarrier && anyAtBarrier) {
        for (Fiber& f : blk.fibers) {
            if (f.wait == Wait::Block) {
                f.wait = Wait::None;
            }
        }
        released = true;
    }
    return released;
}

std::string deadlock(Block const& blk) {
    std::ostringstream s;
    s << "block " << xyz(blk.fibers[0].blockIdx) << ": no thread can go on:";
    int shown = 0, done = 0;
    for (Fiber const& f : blk.fibers) {
        done += f.wait == Wait::Done;
        if (f.wait == Wait::Done || shown >= 8) {
            continue;
        }
        ++shown;
        s << " thread " << xyz(f.threadIdx) << " in " << (f.wait == Wait::Block ? "__syncthreads" : f.op) << ";";
    }
    s << " " << done << " of " << blk.fibers.size() << " threads have ended"
      << " (a collective or barrier not reached by every thread it waits for)";
    return s.str();
}

} // namespace

void* dynamicSmem() {
    return gDynamicSmem;
}

size_t firstUnpoisoned(unsigned char const* g, size_t n) {
    static std::vector<unsigned char> const poison(size_t{1} << 20, 0xCD);
    for (size_t off = 0; off < n; off += poison.size()) {
        size_t const len = std::min(poison.size(), n - off);
        if (std::memcmp(g + off, poison.data(), len) != 0) {
            size_t i = off;
            while (g[i] == 0xCD) {
                ++i;
            }
            return i;
        }
    }
    return n;
}

void sharedVar(void* p, size_t bytes, char const* name) {
    SharedRecord& rec = gShared[p];
    if (rec.block != gBlockSerial) {
        rec = SharedRecord{gBlockSerial, bytes, name};
        std::memset(p, 0xCD, bytes + kSharedGuard);
    }
}

int laneId() {
    return me().linear & 31;
}

} // namespace simt

[[noreturn]] void notEmulated(char const* what) {
    std::fprintf(stderr, "simt: %s is not emulated (only exactly rounded float operations are)\n", what);
    std::abort();
}

namespace simt {

void syncThreads() {
    me().wait = Wait::Block;
    yieldToScheduler();
}

void warpExchange(char const* op, unsigned mask, uint64_t v, uint64_t out[32]) {
    Fiber& f = me();
    f.wait = Wait::Warp;
    f.op = op;
    f.mask = mask;
    f.in = v;
    yieldToScheduler();
    std::memcpy(out, me().out, sizeof(me().out));
}

void run(dim3 grid, dim3 block, size_t dynamicSmemBytes, std::function<void()> const& body) {
    std::lock_guard<std::mutex> lock(gRunning);
    installFaultReport();
    // Shared memory is not initialised on a device: every block starts with a poison pattern in its dynamic
    // part, and each static __shared__ variable gets it (with its guard) when the block first reaches its
    // declaration (sharedVar), so a read of an unstaged slot shows.
    std::vector<unsigned char> dyn(dynamicSmemBytes + kSharedGuard + 128); // the bytes, a guard, alignment slack
    gDynamicSmem = dyn.data() + (128 - reinterpret_cast<uintptr_t>(dyn.data()) % 128) % 128;
    int const n = static_cast<int>(block.x * block.y * block.z);
    if (n <= 0 || n > 1024) {
        throw std::runtime_error("simt::run: block of " + std::to_string(n) + " threads");
    }
    Block blk;
    blk.fibers.resize(n);
    blk.body = &body;
    // The stacks outlive the launch: fresh ones would cost a page fault per touched page per launch.
    static std::vector<std::unique_ptr<char[]>> stacks;
    while (stacks.size() < blk.fibers.size()) {
        stacks.emplace_back(new char[kStack]);
    }
    for (int i = 0; i < n; ++i) {
        Fiber& f = blk.fibers[i];
        f.stack = stacks[i].get();
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = kStack;
        f.ctx.uc_link = &blk.sched;
        makecontext(&f.ctx, fiberMain, 0);
    }
    gBlock = &blk;
    blockDim = block;
    gridDim = grid;
    struct Reset {
        ~Reset() {
            gBlock = nullptr;
            gDynamicSmem = nullptr;
        }
    } reset;
    for (unsigned bz = 0; bz < grid.z; ++bz) {
        for (unsigned by = 0; by < grid.y; ++by) {
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                std::memset(gDynamicSmem, 0xCD, dynamicSmemBytes + kSharedGuard);
                ++gBlockSerial; // static __shared__ variables are poisoned when this block first reaches them
                for (int i = 0; i < n; ++i) {
                    Fiber& f = blk.fibers[i];
                    f.linear = i;
                    f.threadIdx = make_uint3(i % block.x, (i / block.x) % block.y, i / (block.x * block.y));
                    f.blockIdx = make_uint3(bx, by, bz);
                    f.wait = Wait::None;
                }
                for (;;) {
                    bool ran = false, allDone = true;
                    for (int i = 0; i < n; ++i) {
                        if (blk.fibers[i].wait == Wait::None) {
                            resume(blk, i);
                            ran = true;
                        }
                        allDone = allDone && blk.fibers[i].wait == Wait::Done;
                    }
                    if (allDone) {
                        checkSharedGuards(make_uint3(bx, by, bz), static_cast<unsigned char*>(gDynamicSmem),
                                          dynamicSmemBytes);
                        break;
                    }
                    bool const released = release(blk);
                    if (!blk.error.empty()) {
                        throw std::runtime_error("simt: " + blk.error);
                    }
                    if (!ran && !released) {
                        throw std::runtime_error("simt: " + deadlock(blk));
                    }
                }
            }
        }
    }
    checkGuards();
}

} // namespace simt
