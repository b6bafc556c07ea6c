"""What the benchmark scenarios share: the stacks they start, their clients, metrics and reports.

Each scenario is one module of ``benchmarks/`` run as ``python -m
benchmarks.<scenario>``; nothing here is run on its own.
"""
