"""python -m surfgrad.distributed map ..."""

import sys

from surfgrad.distributed.cli import main

sys.exit(main())
