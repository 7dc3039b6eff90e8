"""The page benchmark: the voice chat page in headless Chromium, measured where the user is
(``python -m bench.page``; docs/benchmarks/page.md)."""
