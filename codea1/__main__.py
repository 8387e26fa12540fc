"""``python -m codea1``: the same as the ``codea1`` command."""

import sys

from codea1.harness.cli import main

sys.exit(main())
