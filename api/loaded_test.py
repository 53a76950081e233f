"""//api:loaded_test: the run-time door on libraries built outside Bazel by plain g++ (api/testdata/fake_impl.cc).

Every way a library can fail to load is ONE line naming its cause (impl_check's verdict, and the exception the
first API call throws through //api:loaded), never a crash or a hang; a good library's arguments arrive unchanged
and its exceptions reach the caller as std::runtime_error with their message.
Usage (Bazel passes these): loaded_test.py IMPL_CHECK LOADED_SMOKE FAKE_SRC RUNNER_H CUDA_RUNTIME_H
"""
import hashlib
import os
import struct
import subprocess
import sys
import tempfile
import unittest

IMPL_CHECK, SMOKE, FAKE_SRC, RUNNER_H, CUDA_RUNTIME_H = [os.path.abspath(a) for a in sys.argv[1:6]]
# The workspace root holds kernels/qsaIndexerRunner.h; the toolkit's include directories from the header's real path.
WORKSPACE = os.path.dirname(os.path.dirname(RUNNER_H))
CUDA_INC = os.path.dirname(os.path.realpath(CUDA_RUNTIME_H))
TMP = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
BUILD_ID = "0123456789abcdef0123456789abcdef01234567"


def cxx(out, *flags, src=FAKE_SRC, shared=True, libs=()):
    cmd = ["g++", "-std=c++17", "-O1", "-fPIC", "-I" + WORKSPACE, "-isystem", CUDA_INC,
           "-isystem", os.path.join(CUDA_INC, "cccl"), *flags, src, *libs, "-o", out]
    if shared:
        cmd.insert(1, "-shared")
    subprocess.run(cmd, check=True)
    return out


def fake(name, *defines, extra=(), libs=()):
    return cxx(os.path.join(TMP, name), *["-D" + d for d in defines], *extra, libs=libs)


def check(lib, *args, env=None):
    p = subprocess.run([IMPL_CHECK, lib, *args], capture_output=True, text=True, timeout=120,
                       env={**os.environ, **(env or {})})
    lines = p.stdout.strip().splitlines()
    return p.returncode, lines[-1] if lines else "", p.stdout


def smoke(lib, env=None):
    e = {k: v for k, v in os.environ.items() if k != "QSA_IMPL_LIB"}
    if lib is not None:
        e["QSA_IMPL_LIB"] = lib
    p = subprocess.run([SMOKE], capture_output=True, text=True, timeout=120, env={**e, **(env or {})})
    return p.returncode, p.stdout


class Refusals(unittest.TestCase):
    """Each fault: impl_check exits 1 with one REFUSED line that names the cause."""

    def refused(self, lib, *needles, args=(), env=None):
        rc, line, out = check(lib, *args, env=env)
        self.assertEqual(rc, 1, out)
        self.assertTrue(line.startswith("impl_check: REFUSED "), out)
        for n in needles:
            self.assertIn(n, line, out)
        return line

    def test_no_such_file(self):
        self.refused(os.path.join(TMP, "nope.so"), "nope.so: no such file")

    def test_directory(self):
        self.refused(TMP, "a directory, not a shared library")

    def test_text_file(self):
        p = os.path.join(TMP, "notes.so")
        with open(p, "w") as f:
            f.write("not a library\n")
        self.refused(p, "not a shared library (not an ELF file)")

    def test_truncated_elf(self):
        good = fake("libtrunc_src.so")
        p = os.path.join(TMP, "libtrunc.so")
        with open(good, "rb") as f, open(p, "wb") as g:
            g.write(f.read()[:100])
        self.refused(p, "not a shared library (truncated or malformed ELF program headers)")

    def test_object_file(self):
        obj = cxx(os.path.join(TMP, "fake.o"), "-c", shared=False)
        self.refused(obj, "not a shared library (a relocatable object (.o)")

    def test_executable(self):
        src = os.path.join(TMP, "main.cc")
        with open(src, "w") as f:
            f.write("int main() { return 0; }\n")
        exe = cxx(os.path.join(TMP, "a.out"), "-no-pie", src=src, shared=False)
        self.refused(exe, "not a shared library (an executable")

    def test_missing_symbol_is_named_demangled(self):
        line = self.refused(fake("libnobf16.so", "FAKE_OMIT_DECODE_BF16"),
                            "missing symbol void trt_edgellm::kernel::runQsaIndexerDecode<__nv_bfloat16>(int*, "
                            "__nv_bfloat16 const*, float const*, int const*, __nv_bfloat16 const*, "
                            "__nv_bfloat16 const*, float, trt_edgellm::kernel::QsaIndexerPoolState const&, int*, "
                            "void*, unsigned long, int, int, CUstream_st*)")
        self.assertNotIn("_ZN", line)

    def test_two_missing_symbols_are_both_named(self):
        self.refused(fake("libnotwo.so", "FAKE_OMIT_DECODE_BF16", "FAKE_OMIT_DECODE_SIZE"), "missing 2 symbols",
                     "getQsaIndexerDecodeWorkspaceSize(int, int)", "runQsaIndexerDecode<__nv_bfloat16>")

    def test_size_function_throws(self):
        self.refused(fake("libthrows.so", "FAKE_SIZE_THROWS"),
                     "getQsaIndexerWorkspaceSize(1, 64) threw on valid arguments: "
                     "getQsaIndexerWorkspaceSize: fake refuses batchSize 1")

    def test_size_function_crashes(self):
        self.refused(fake("libcrash.so", "FAKE_SIZE_CRASHES"),
                     "crashed (SIGSEGV) while calling getQsaIndexerWorkspaceSize(1, 64)")

    def test_size_function_hangs(self):
        self.refused(fake("libhang.so", "FAKE_SIZE_HANGS"),
                     "hung for 2 s while calling getQsaIndexerWorkspaceSize(1, 64)", args=("--timeout", "2"))

    def test_constructor_crashes(self):
        self.refused(fake("libctor.so", "FAKE_CONSTRUCTOR_CRASHES"),
                     "crashed (SIGSEGV) while loading the library (dlopen, its constructors)")

    def test_runtime_newer_than_driver(self):
        self.refused(fake("librt14.so", "FAKE_RUNTIME_VERSION=14010"),
                     "uses CUDA runtime 14.1, newer than this host's driver supports (CUDA 13.0)",
                     args=("--driver-cuda-version", "13000"))

    def test_shared_runtime_not_found(self):
        lib = self.shared_runtime_lib(12080)
        self.refused(lib, "needs the CUDA runtime libcudart.so.12 (linked shared), which this host's loader "
                     "cannot find", "libcudart.so.12: cannot open shared object file",
                     env={"LD_LIBRARY_PATH": ""})

    def test_shared_runtime_newer_than_driver(self):
        lib = self.shared_runtime_lib(99000)
        self.refused(lib, "uses CUDA runtime 99.0", args=("--driver-cuda-version", "13000"),
                     env={"LD_LIBRARY_PATH": os.path.dirname(lib) + "/stub"})

    def shared_runtime_lib(self, version):
        """A library linked against a stub libcudart.so.12 (in DIR/stub) reporting `version`."""
        d = os.path.join(TMP, "shared%d" % version)
        os.makedirs(d + "/stub", exist_ok=True)
        stub = os.path.join(d, "stub.c")
        with open(stub, "w") as f:
            f.write("int cudaRuntimeGetVersion(int* v) { *v = %d; return 0; }\n" % version)
        subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", stub, "-o",
                        d + "/stub/libcudart.so.12"], check=True)
        return fake(os.path.join(d, "libshared.so"), "FAKE_NEEDS_CUDART",
                    libs=("-L" + d + "/stub", "-l:libcudart.so.12"))


class GoodLibrary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = fake("libgood.so", "FAKE_RUNTIME_VERSION=13000", extra=("-Wl,--build-id=0x" + BUILD_ID,))

    def test_check_accepts_and_names_identity(self):
        rc, line, out = check(self.lib, "--driver-cuda-version", "13000")
        self.assertEqual(rc, 0, out)
        self.assertEqual(line, "impl_check: OK 6 API symbols resolved, CUDA runtime 13.0, driver CUDA 13.0, "
                         "getQsaIndexerWorkspaceSize(1, 64) = 100064 bytes, "
                         "getQsaIndexerDecodeWorkspaceSize(1, 16) = 1023 bytes")
        with open(self.lib, "rb") as f:
            data = f.read()
        self.assertIn("bytes %d, sha256 %s" % (len(data), hashlib.sha256(data).hexdigest()), out)
        self.assertIn("build id " + BUILD_ID, out)
        self.assertIn("CUDA runtime static (linked in: defines cudaRuntimeGetVersion)", out)

    def test_hidden_static_runtime_and_nvcc_release_are_named(self):
        rc, line, out = check(fake("libmarkers.so", "FAKE_STATIC_MARKERS"), "--driver-cuda-version", "13000")
        self.assertEqual(rc, 0, out)
        self.assertIn("CUDA runtime static (libcudart_static linked in, its symbols hidden)", out)
        self.assertIn("device code: Cuda compilation tools, release 13.0, V13.0.88\n", out)
        self.assertIn("CUDA runtime not visible", line)

    def test_relative_path_is_the_file_not_a_search(self):
        rc, line, out = check(os.path.relpath(self.lib), "--driver-cuda-version", "13000")
        self.assertEqual(rc, 0, out)

    def test_arguments_arrive_unchanged(self):
        rc, out = smoke(self.lib)
        self.assertEqual(rc, 0, out)
        f025 = struct.unpack("<i", struct.pack("<f", 0.25))[0]
        f05 = struct.unpack("<i", struct.pack("<f", 0.5))[0]
        # marker (10 * runner + 1 half / 2 bf16), q and w offsets in bytes from outIdx, eps bits, workspaceBytes,
        # the two sizes, pool numPages, stream; decode adds splitCounters' offset.
        expected = ["prefill size 200096", "decode size 4016"]
        for t, m in (("half", 1), ("bf16", 2)):
            expected.append("prefill<%s> %d 80 120 %d 4096 3 65 77 20816" % (t, 10 + m, f025))
            expected.append("decode<%s> %d 80 120 %d 8192 5 33 77 20816 160" % (t, 20 + m, f05))
        self.assertEqual(out.split("\n")[:-1], expected)

    def test_library_exceptions_reach_the_caller(self):
        rc, out = smoke(fake("librunthrows.so", "FAKE_RUN_THROWS"))
        self.assertEqual(rc, 0, out)
        self.assertIn("prefill<half> threw std::runtime_error: runQsaIndexerPrefill: workspaceBytes 4096 is below "
                      "the required 4096", out)
        self.assertIn("prefill<bf16> threw std::runtime_error: runQsaIndexerPrefill", out)

    def test_api_calls_throw_the_load_error(self):
        rc, out = smoke(None)
        self.assertEqual(rc, 0, out)
        self.assertIn("prefill size threw std::runtime_error: //api:loaded: no implementation library given "
                      "(QSA_IMPL_LIB is empty", out)
        rc, out = smoke(fake("libnobf16b.so", "FAKE_OMIT_DECODE_BF16"))
        self.assertIn("decode<bf16> threw std::runtime_error: //api:loaded: cannot load ", out)
        self.assertIn("missing symbol void trt_edgellm::kernel::runQsaIndexerDecode<__nv_bfloat16>", out)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
