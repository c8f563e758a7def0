"""``python -m tx8lab``: the same as the ``tx8lab`` command."""

from __future__ import annotations

import sys

from tx8lab.cli import main

if __name__ == "__main__":
    sys.exit(main())
