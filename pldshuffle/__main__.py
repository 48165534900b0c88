"""``python -m pldshuffle``: the command line (see :mod:`pldshuffle.cli`)."""

import sys

from .cli import main

sys.exit(main())
