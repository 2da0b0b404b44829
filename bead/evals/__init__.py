"""The eval harness: suites in ../shared/evals/FORMAT.md's format."""
