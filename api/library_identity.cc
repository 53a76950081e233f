#include "api/library_identity.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qsa {
namespace api {

namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
constexpr char const* kHostMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
constexpr char const* kHostMachineName = "aarch64";
#else
#error "library_identity: unknown host machine"
#endif

// Every read is bounds-checked: a truncated or hostile file yields an error string, never an out-of-range read.
template <typename S>
bool at(std::string const& img, uint64_t off, S& out) {
    if (off > img.size() || img.size() - off < sizeof(S)) {
        return false;
    }
    std::memcpy(&out, img.data() + off, sizeof(S));
    return true;
}

std::string cString(std::string const& img, uint64_t off) {
    if (off >= img.size()) {
        return "";
    }
    size_t const end = img.find('\0', off);
    return img.substr(off, (end == std::string::npos ? img.size() : end) - off);
}

std::string hex(unsigned char const* p, size_t n) {
    static char const* const kDigits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += kDigits[p[i] >> 4];
        s += kDigits[p[i] & 15];
    }
    return s;
}

// A virtual address of a PT_LOAD segment as a file offset (DT_STRTAB and DT_SYMTAB are addresses).
bool vaddrToOffset(std::vector<Elf64_Phdr> const& loads, uint64_t vaddr, uint64_t& off) {
    for (Elf64_Phdr const& p : loads) {
        if (vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz) {
            off = p.p_offset + (vaddr - p.p_vaddr);
            return true;
        }
    }
    return false;
}

// The ELF facts of an image in memory: a malformed image is an error string, never a crash.
ElfFacts readElfFacts(std::string const& img) {
    ElfFacts f;
    Elf64_Ehdr eh{};
    if (img.size() < EI_NIDENT || std::memcmp(img.data(), ELFMAG, SELFMAG) != 0) {
        f.error = "not a shared library (not an ELF file)";
        return f;
    }
    if (static_cast<unsigned char>(img[EI_CLASS]) != ELFCLASS64 || !at(img, 0, eh)) {
        f.error = "not a shared library for this host (a 32-bit ELF file; the kit is 64-bit " +
                  std::string(kHostMachineName) + ")";
        return f;
    }
    if (eh.e_machine != kHostMachine) {
        f.error = "not a shared library for this host (ELF machine " + std::to_string(eh.e_machine) + ", the kit is " +
                  kHostMachineName + ")";
        return f;
    }
    if (eh.e_type != ET_DYN) {
        char const* kind = eh.e_type == ET_REL    ? "a relocatable object (.o)"
                           : eh.e_type == ET_EXEC ? "an executable"
                                                  : "an ELF file";
        f.error = std::string("not a shared library (") + kind + ", ELF type " + std::to_string(eh.e_type) + ")";
        return f;
    }
    std::vector<Elf64_Phdr> loads;
    std::vector<Elf64_Phdr> notes;
    Elf64_Phdr dyn{};
    bool hasDyn = false;
    for (uint64_t i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr p{};
        if (eh.e_phentsize != sizeof(Elf64_Phdr) || !at(img, eh.e_phoff + i * sizeof(Elf64_Phdr), p)) {
            f.error = "not a shared library (truncated or malformed ELF program headers)";
            return f;
        }
        if (p.p_type == PT_LOAD) {
            loads.push_back(p);
        } else if (p.p_type == PT_NOTE) {
            notes.push_back(p);
        } else if (p.p_type == PT_DYNAMIC) {
            dyn = p;
            hasDyn = true;
        }
    }
    if (!hasDyn) {
        // A position-independent executable is ET_DYN too; a shared library has a dynamic section.
        f.error = "not a shared library (an ELF file without a dynamic section)";
        return f;
    }
    for (Elf64_Phdr const& p : notes) {
        uint64_t off = p.p_offset;
        uint64_t const end = p.p_offset + p.p_filesz;
        Elf64_Nhdr nh{};
        while (off < end && at(img, off, nh)) {
            uint64_t const name = off + sizeof(nh);
            uint64_t const desc = name + ((nh.n_namesz + 3) & ~3ull);
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && cString(img, name) == "GNU" && desc <= img.size() &&
                img.size() - desc >= nh.n_descsz) {
                f.buildId = hex(reinterpret_cast<unsigned char const*>(img.data() + desc), nh.n_descsz);
            }
            off = desc + ((nh.n_descsz + 3) & ~3ull);
        }
    }
    uint64_t strtab = 0, symtab = 0;
    std::vector<uint64_t> neededOffsets;
    uint64_t sonameOffset = UINT64_MAX;
    for (uint64_t off = dyn.p_offset; off + sizeof(Elf64_Dyn) <= dyn.p_offset + dyn.p_filesz;
         off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn d{};
        if (!at(img, off, d) || d.d_tag == DT_NULL) {
            break;
        }
        switch (d.d_tag) {
        case DT_NEEDED:
            neededOffsets.push_back(d.d_un.d_val);
            break;
        case DT_SONAME:
            sonameOffset = d.d_un.d_val;
            break;
        case DT_STRTAB:
            strtab = d.d_un.d_ptr;
            break;
        case DT_SYMTAB:
            symtab = d.d_un.d_ptr;
            break;
        default:
            break;
        }
    }
    uint64_t strOff = 0;
    if (!vaddrToOffset(loads, strtab, strOff)) {
        f.error = "not a shared library (its dynamic string table is outside the file)";
        return f;
    }
    for (uint64_t o : neededOffsets) {
        f.needed.push_back(cString(img, strOff + o));
    }
    if (sonameOffset != UINT64_MAX) {
        f.soname = cString(img, strOff + sonameOffset);
    }
    // The dynamic symbol table's length is not in the dynamic section: it runs from DT_SYMTAB up to the string
    // table in every layout GNU ld, gold and lld write (.dynsym then .dynstr); bounded by the file either way.
    uint64_t symOff = 0;
    if (symtab != 0 && vaddrToOffset(loads, symtab, symOff) && strOff > symOff) {
        for (uint64_t off = symOff; off + sizeof(Elf64_Sym) <= strOff; off += sizeof(Elf64_Sym)) {
            Elf64_Sym s{};
            if (!at(img, off, s)) {
                break;
            }
            int const type = ELF64_ST_TYPE(s.st_info);
            if (s.st_shndx != SHN_UNDEF && s.st_name != 0 && (type == STT_FUNC || type == STT_OBJECT)) {
                f.defined.push_back(cString(img, strOff + s.st_name));
            }
        }
    }
    return f;
}

// ---- SHA-256 (FIPS 180-4) ----------------------------------------------------------------------------------

std::string sha256Hex(std::string const& bytes) {
    static constexpr std::array<uint32_t, 64> kK = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    auto rotr = [](uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
    std::string msg = bytes;
    uint64_t const bits = static_cast<uint64_t>(bytes.size()) * 8;
    msg += static_cast<char>(0x80);
    while (msg.size() % 64 != 56) {
        msg += '\0';
    }
    for (int i = 7; i >= 0; --i) {
        msg += static_cast<char>((bits >> (8 * i)) & 0xff);
    }
    for (size_t chunk = 0; chunk < msg.size(); chunk += 64) {
        std::array<uint32_t, 64> w{};
        for (int i = 0; i < 16; ++i) {
            auto const* p = reinterpret_cast<unsigned char const*>(msg.data() + chunk + 4 * i);
            w[i] = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
        }
        for (int i = 16; i < 64; ++i) {
            uint32_t const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        std::array<uint32_t, 8> v = h;
        for (int i = 0; i < 64; ++i) {
            uint32_t const s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
            uint32_t const ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
            uint32_t const t1 = v[7] + s1 + ch + kK[i] + w[i];
            uint32_t const s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
            uint32_t const maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            uint32_t const t2 = s0 + maj;
            v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
        }
        for (int i = 0; i < 8; ++i) {
            h[i] += v[i];
        }
    }
    unsigned char out[32];
    for (int i = 0; i < 8; ++i) {
        for (int j = 0; j < 4; ++j) {
            out[4 * i + j] = static_cast<unsigned char>(h[i] >> (24 - 8 * j));
        }
    }
    return hex(out, 32);
}

} // namespace

int cudartSonameMajor(std::string const& name) {
    std::string const prefix = "libcudart.so.";
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) {
        return -1;
    }
    int major = 0;
    for (size_t i = prefix.size(); i < name.size() && name[i] != '.'; ++i) {
        if (name[i] < '0' || name[i] > '9' || major > 1000) {
            return -1;
        }
        major = major * 10 + (name[i] - '0');
    }
    return major;
}

LibraryIdentity identifyLibrary(std::string const& path, bool withSha256) {
    namespace fs = std::filesystem;
    LibraryIdentity id;
    std::error_code ec;
    fs::path const abs = fs::absolute(path, ec);
    id.path = ec ? path : abs.lexically_normal().string();
    fs::file_status const st = fs::status(path, ec);
    if (ec || !fs::exists(st)) {
        id.error = "no such file";
        return id;
    }
    if (fs::is_directory(st)) {
        id.error = "a directory, not a shared library";
        return id;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in) {
        id.error = "cannot be read (permission denied?)";
        return id;
    }
    std::string const img = bytes.str();
    id.bytes = img.size();
    if (withSha256) {
        id.sha256 = sha256Hex(img);
    }
    id.elf = readElfFacts(img);
    for (std::string const& n : id.elf.needed) {
        if (cudartSonameMajor(n) >= 0) {
            id.cudaRuntime = "shared " + n;
        }
    }
    std::vector<std::string> const& defined = id.elf.defined;
    if (id.cudaRuntime.empty() && std::find(defined.begin(), defined.end(), "cudaRuntimeGetVersion") != defined.end()) {
        id.cudaRuntime = "static (linked in: defines cudaRuntimeGetVersion)";
    }
    if (id.cudaRuntime.empty() && img.find("libcudart_static_") != std::string::npos) {
        id.cudaRuntime = "static (libcudart_static linked in, its symbols hidden)";
    }
    size_t const nvcc = img.find("Cuda compilation tools, release ");
    if (nvcc != std::string::npos) {
        size_t const end = img.find_first_of(std::string("\n\0", 2), nvcc);
        id.nvcc = img.substr(nvcc, std::min<size_t>(end == std::string::npos ? 80 : end - nvcc, 80));
    }
    if (id.cudaRuntime.empty()) {
        id.cudaRuntime = "none visible (no libcudart in DT_NEEDED, no CUDA runtime symbol exported)";
    }
    return id;
}

nlohmann::json identityJson(LibraryIdentity const& id) {
    nlohmann::json j = {{"path", id.path},
                        {"bytes", id.bytes},
                        {"sha256", id.sha256},
                        {"build_id", id.elf.buildId.empty() ? "none" : id.elf.buildId},
                        {"soname", id.elf.soname},
                        {"cuda_runtime", id.cudaRuntime},
                        {"nvcc", id.nvcc.empty() ? "not recorded" : id.nvcc},
                        {"needed", id.elf.needed}};
    if (!id.error.empty() || !id.elf.error.empty()) {
        j["error"] = !id.error.empty() ? id.error : id.elf.error;
    }
    return j;
}
} // namespace api
} // namespace qsa
