"""Load and scale measurements of volumesvc (not pass/fail tests).

A package so the scripts share one copy of their stack, metrics and report
writer; run each from the repository root as ``python -m benchmarks.<script>``
(see ``benchmarks/README.md``). Nothing here is part of the installed product.
"""
