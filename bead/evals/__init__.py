"""The eval harness: suites in the format docs/evals.md describes."""
