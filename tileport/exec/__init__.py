"""Executors: every external process tileport runs (proc), where the tools live (toolchain, resolved once
from the config), whether they are all here (doctor), git, and the one Tile IR backend (tileirdisasm + tileiras).

Imports only the contract (records, config, errors); everything above runs tools through here.
"""
