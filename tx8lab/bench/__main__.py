"""``python -m tx8lab.bench`` (what ``make bench`` runs): every table of the package."""

from __future__ import annotations

from tx8lab.bench import main

raise SystemExit(main())
