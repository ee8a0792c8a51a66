"""``python -m zocrates_nb`` is the ``zocrates-nb`` command."""

from __future__ import annotations

import sys

from zocrates_nb.cli import main

sys.exit(main())
