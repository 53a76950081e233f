"""C++ and CUDA target macros: the project's conventions, written once.

Static binaries (shared/TOOLCHAIN.md), gtest_main, sources named like the target, the tag "gpu" on what needs a
GPU (tests also get the remote GPU pool's exec_properties), cudart_static under every CUDA library. All other
attributes pass through unchanged and label lists keep buildifier's order: `bazel query --output=build` shows
what a hand-written stanza would.
"""

load(":cuda.bzl", "cuda_library")
load(":remote.bzl", "GPU_EXEC_PROPERTIES")

_GTEST_MAIN = "@gtest//:gtest_main"

_CUDART = "@cuda//:cudart_static"

def _label_order(label):
    # buildifier's order of a sorted label list: plain strings, then ":x", then "//x", then "@x"; within a phase
    # the parts between ':' and '.' compare in turn.
    phase = 0
    if label.startswith(":"):
        phase = 1
    elif label.startswith("//"):
        phase = 2
    elif label.startswith("@"):
        phase = 3
    return (phase, label.replace(":", ".").split("."))

def _insert_sorted(labels, label):
    """Returns labels with label inserted where buildifier sorts it (the order of the others is kept)."""
    key = _label_order(label)
    for i, other in enumerate(labels):
        if _label_order(other) > key:
            return labels[:i] + [label] + labels[i:]
    return labels + [label]

def _gpu_tags(tags, gpu):
    """tags, plus "gpu" when gpu is set, sorted; None (the rule's default) when empty."""
    out = sorted(tags + ["gpu"]) if gpu and "gpu" not in tags else tags
    return out if out else None

def qsa_cc_library(name, srcs = None, hdrs = None, test_deps = None, **kwargs):
    """A cc_library whose sources default to one source file and its header, optionally with its unit test.

    Args:
      name: the target name.
      srcs: default [name + ".cc"]; [] for a header-only library.
      hdrs: default [name + ".h"].
      test_deps: when given (even []), also declares the qsa_cc_test <name>_test (<name>_test.cc, the library's
        copts) linking the library and these.
      **kwargs: every other cc_library attribute.
    """
    native.cc_library(
        name = name,
        srcs = [name + ".cc"] if srcs == None else (srcs or None),
        hdrs = [name + ".h"] if hdrs == None else hdrs,
        **kwargs
    )
    if test_deps != None:
        qsa_cc_test(
            name = name + "_test",
            copts = kwargs.get("copts"),
            deps = [":" + name] + test_deps,
        )

def qsa_cuda_library(name, srcs = None, hdrs = None, deps = [], **kwargs):
    """A cuda_library whose sources default to one .cu file and its header; every one links cudart_static.

    Args:
      name: the target name.
      srcs: default [name + ".cu"].
      hdrs: default [name + ".h"].
      deps: its own dependencies; @cuda//:cudart_static is added (in sorted position).
      **kwargs: every other cuda_library attribute (testonly, copts, ...).
    """
    cuda_library(
        name = name,
        srcs = [name + ".cu"] if srcs == None else srcs,
        hdrs = [name + ".h"] if hdrs == None else hdrs,
        deps = _insert_sorted(deps, _CUDART),
        **kwargs
    )

def qsa_cc_test(
        name,
        deps = [],
        srcs = None,
        size = "small",
        gtest_main = True,
        gpu = False,
        tags = [],
        linkstatic = True,
        **kwargs):
    """A statically linked gtest cc_test.

    Args:
      name: the target name.
      deps: the test's own dependencies; gtest_main is added (in sorted position) unless gtest_main = False.
      srcs: default [name + ".cc"]; [] for none (the test's code is in its deps).
      size: Bazel test size, default "small".
      gtest_main: whether to link @gtest//:gtest_main (False: the test has its own main and lists @gtest).
      gpu: the test needs a GPU: tag "gpu" and the remote GPU pool's exec_properties.
      tags: further tags.
      linkstatic: default True; None leaves the rule's default.
      **kwargs: every other cc_test attribute (args, copts, data, shard_count, local_defines, ...).
    """
    native.cc_test(
        name = name,
        size = size,
        srcs = [name + ".cc"] if srcs == None else (srcs or None),
        exec_properties = GPU_EXEC_PROPERTIES if gpu else None,
        linkstatic = linkstatic,
        tags = _gpu_tags(tags, gpu),
        deps = _insert_sorted(deps, _GTEST_MAIN) if gtest_main else deps,
        **kwargs
    )

def qsa_cc_binary(name, srcs = None, gpu = False, tags = [], **kwargs):
    """A cc_binary whose source defaults to <name>.cc.

    Args:
      name: the target name.
      srcs: default [name + ".cc"].
      gpu: the binary needs a GPU at run time: tag "gpu".
      tags: further tags.
      **kwargs: every other cc_binary attribute (deps, copts, linkstatic, data, testonly, ...).
    """
    native.cc_binary(
        name = name,
        srcs = [name + ".cc"] if srcs == None else srcs,
        tags = _gpu_tags(tags, gpu),
        **kwargs
    )

def c_string_cc(name, out, symbol, src = None, lines = None):
    """A genrule writing `namespace qsa { namespace <ns> { extern char const <sym>[] = R"qsatext(...)qsatext"; } }`.

    The string is a newline, then src's text or the given lines one a line (each ending in a newline).

    Args:
      name: the genrule's name.
      out: the .cc it writes.
      symbol: "<ns>::<sym>", the C string's namespace inside qsa and its name.
      src: the file whose text it is (exclusive with lines); it must not contain `)qsatext"`.
      lines: the lines of the text, words without quotes or shell metacharacters (exclusive with src).
    """
    if (src == None) == (lines == None):
        fail("c_string_cc %s: give exactly one of src and lines" % name)
    ns, sym = symbol.split("::")
    head = "echo 'namespace qsa { namespace %s { extern char const %s[] = R\"qsatext('; " % (ns, sym)
    body = "cat $<; " if src != None else " ".join(["echo %s;" % line for line in lines]) + " "
    native.genrule(
        name = name,
        srcs = [src] if src != None else None,
        outs = [out],
        cmd = "(" + head + body + "echo ')qsatext\"; } }') > $@",
    )
