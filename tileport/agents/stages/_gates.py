"""Finding the GPU gates (tileport.validators.gpu). Until they are installed, D and E are BLOCKED(env) naming
what is missing: never a pass."""

from __future__ import annotations

from typing import Any, Callable


def gate(name: str) -> tuple[Callable[..., Any] | None, str | None]:
    """(the gate function, None) or (None, why it is missing)."""
    try:
        from tileport.validators import gpu  # type: ignore[attr-defined]
    except ImportError:
        return None, ("the GPU gates (tileport.validators.gpu) are not installed; stages D and E need them, torch "
                      "and a CUDA GPU")
    fn = getattr(gpu, name, None)
    if fn is None:
        return None, f"tileport.validators.gpu has no {name}(); update tileport"
    return fn, None


def inputs(ctx) -> tuple[Any, Any]:
    """(analysis, spec) of the conversion, as the gates take them."""
    from tileport.validators.rust.reference import load_analysis
    from tileport.validators.rust.spec import load_spec

    return load_analysis(ctx.paths.reference), load_spec(ctx.paths.spec_json)
