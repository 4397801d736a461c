"""Adapters that plug rodlab into outside benchmark suites, and helpers for the bench scripts.

``rodlab.bench_adapters.cosseratbench``: one cosseratbench solver per rodlab method (needs the
optional extra ``rodlab[bench]``). ``rodlab.bench_adapters.report``: machine description and
generated-section replacement in the Markdown benchmark pages.
"""
