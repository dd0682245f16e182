"""Write (or with --check, verify) docs/draft_coverage.md: the draft translator's coverage of cuda.tile against
cutile-rs 0.5, generated from tileport/draft/coverage.py and the installed cuda.tile's public names.

    .venv/bin/python scripts/gen_coverage.py [--check]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tileport.draft.coverage import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
