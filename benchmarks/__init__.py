"""The benchmarks of the library: ``python -m benchmarks`` runs the whole matrix (issue 9;
``benchmarks/README.md`` says what each row means), and the ``bench_*.py`` scripts measure the
pure core's pieces on their own."""
