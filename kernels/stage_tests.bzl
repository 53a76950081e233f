"""This project's kernel stage tests (GPU, //kernels:qsa_kernels' own launchers against //reference).

kernels/BUILD declares one cc_test per name; certify (tools/BUILD) also runs them when //api:impl is
//kernels:qsa_kernels and names them in one line of the certificate.
"""

KERNEL_STAGE_TESTS = [
    "alignment_test",
    "api_errors_test",
    "decode_pipeline_test",
    "decode_prep_test",
    "decode_scores_test",
    "decode_select_test",
    "expand_test",
    "kcompress_test",
    "launch_failure_test",
    "prefill_pipeline_test",
    "qprep_test",
    "scores_test",
    "sort_test",
]
