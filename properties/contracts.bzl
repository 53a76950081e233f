"""THE list of the contracts of ../shared/CONTRACT.md section 7 and their property targets.

Everything else is derived from it: the property test targets (properties/BUILD), certify's plan (the
generated contracts.tsv embedded in //tools:certify, and its data deps in tools/BUILD) and the mutant
runner's order of property binaries (tools/mutants/run_mutants.sh reads contracts.tsv).

Fields:
  number       contract section 7 number
  name         short name
  levels       the levels (contract section 8) its checks belong to (per check: checks/registry.tsv)
  test         the CPU test target; the GPU variant is test + "_gpu"
  shards       shard_count of both variants (gtest splits the properties over the shards; each property runs
               its whole budget with its shard's own seed)
  mutant_rank  position in the mutant runner's order (the fastest killers first); -1: not run by it
"""

CONTRACTS = [
    struct(number = 1, name = "differential", levels = ["core", "hardened"], test = "differential_test", shards = 2, mutant_rank = 2),
    struct(number = 2, name = "index layout", levels = ["core"], test = "layout_test", shards = 2, mutant_rank = 1),
    struct(number = 3, name = "padding", levels = ["core", "hardened"], test = "padding_test", shards = 3, mutant_rank = 4),
    struct(number = 4, name = "determinism", levels = ["core"], test = "determinism_test", shards = 3, mutant_rank = 7),
    struct(number = 5, name = "batch invariance", levels = ["core", "hardened"], test = "batch_invariance_test", shards = 3, mutant_rank = 6),
    struct(number = 6, name = "prefill/decode equivalence", levels = ["core"], test = "prefill_decode_test", shards = 2, mutant_rank = 5),
    struct(number = 7, name = "pool hygiene", levels = ["core", "hardened"], test = "pool_hygiene_test", shards = 2, mutant_rank = 3),
    struct(number = 8, name = "workspace", levels = ["core", "hardened"], test = "workspace_test", shards = 2, mutant_rank = 8),
    # Decode stages B1/B2 through the workspace read-back (section 6): portable, any implementation.
    struct(number = 1, name = "decode stages", levels = ["core"], test = "decode_stages_test", shards = 2, mutant_rank = 0),
]

# Stage properties: this project's own launchers (//kernels:qsa_kernels), GPU only; certify runs them only when
# //api:impl is //kernels:qsa_kernels. mutant_rank 0: the mutant runner runs them first.
STAGE_PROPERTY_TESTS = [
    struct(number = 1, name = "stages", levels = ["core"], test = "differential_stages_test", shards = 2, mutant_rank = 0),
]

def contracts_tsv_lines():
    """The rows of contracts.tsv.

    Returns:
      One tab-separated line per entry: kind, number, name, levels, gpu binary, mutant rank.
    """
    rows = [("contract", c, c.test + "_gpu") for c in CONTRACTS] + [("stage", c, c.test) for c in STAGE_PROPERTY_TESTS]
    return ["\t".join([kind, str(c.number), c.name, ",".join(c.levels), "properties/" + binary, str(c.mutant_rank)]) for kind, c, binary in rows]
