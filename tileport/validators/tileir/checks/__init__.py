"""The IR diff's checks, one module per category, run in this order on every matched entry pair.

Each check reads the pair's alignment (`Ctx.al`) and appends findings to `Ctx.findings`; later checks
see what earlier ones found (`structure` runs last and reports any difference no other check named).
"""

from tileport.validators.tileir.checks.assumptions import check_assumptions
from tileport.validators.tileir.checks.benign import check_benign
from tileport.validators.tileir.checks.entries import check_signature
from tileport.validators.tileir.checks.equivalence import check_equivalent_forms
from tileport.validators.tileir.checks.hints import check_entry_hints
from tileport.validators.tileir.checks.math import check_fusion
from tileport.validators.tileir.checks.memory import check_memory
from tileport.validators.tileir.checks.ops import check_pairs
from tileport.validators.tileir.checks.structure import check_structure

CHECKS = (check_signature, check_entry_hints, check_assumptions, check_memory, check_pairs, check_equivalent_forms,
          check_fusion, check_benign, check_structure)

__all__ = ["CHECKS"]
