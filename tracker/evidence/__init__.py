"""Evidence that holds up: an append-only, signed, timestamped record of what Yinji saw."""
