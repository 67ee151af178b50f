"""Top-k (`cltune.topk`) as a kernel family (#41)."""
