"""A suspect against the library: candidates verified by the alignment, passages located,
long texts in windows.
"""
