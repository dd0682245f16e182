"""Tile IR as tileirdisasm prints it: parse, canonical structural form, categorized diff, report."""
