# Rank programs, started by the tests with mpiexec: never collected or imported by pytest itself.
collect_ignore_glob = ["*.py"]
