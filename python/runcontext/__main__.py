"""``python -m runcontext``: the same command line as the ``runcontext`` script."""

from __future__ import annotations

import sys

from runcontext.cli import main

if __name__ == "__main__":
    sys.exit(main())
