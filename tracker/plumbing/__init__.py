"""Settings from the environment, the data folder, opening the backends, failures said
plainly, terminal widths, fonts.
"""
