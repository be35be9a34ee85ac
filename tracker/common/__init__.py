"""The vocabulary every layer shares: records, input rules, ids, times."""
