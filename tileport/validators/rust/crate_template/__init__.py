"""Files tileport writes into every conversion crate (package data, read with importlib.resources)."""
