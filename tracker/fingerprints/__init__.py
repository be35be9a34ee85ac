"""The fingerprint algorithms: Daguan's windows, SimHash, MinHash (pure functions; no
storage, no index).
"""
