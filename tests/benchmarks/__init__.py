"""`make bench`: Weaver's performance figures against a parse floor measured in the same run.

Run as `python -m tests.benchmarks` (see `__main__.py`). Not collected by `make test`
(`--ignore=tests/benchmarks` in pyproject). Layout:

- `vaultgen`: deterministic synthetic vaults (seeded; the same notes on every machine).
- `report`: the `Figure` record, targets, the table and the JSON file.
- `worker`: runs one measurement in a fresh interpreter (`python -m tests.benchmarks.worker`), so
  peak RSS and timings are those of a clean process, not of the benchmark driver.
- one module per figure group: `indexing` (parse floor, full and no-op index, memory, scaling),
  `freshness` (watcher: change → visible), `queries` (every MCP read tool, graph and name index
  builds, a sync workflow trigger, stdio, serving memory).
"""
