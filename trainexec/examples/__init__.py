"""Small, real example jobs used by the demo, the tests and the benchmarks."""
