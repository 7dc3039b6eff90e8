"""``python -m bench.page``: see ``bench.page.run``."""

import sys

from bench.page.run import main

sys.exit(main())
