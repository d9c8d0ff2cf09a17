"""`python -m azjax.cli ARGS`: the `azjax` command."""

import sys

from azjax.cli import main

sys.exit(main())
