"""Deprecated: this module is now `azjax.bots` (the baseline and search bots, and agent specs), so that it is not
confused with `azjax.agent` (a trained `Agent`). `import azjax.agents` still works and gives `azjax.bots`."""

import sys
import warnings

from azjax import bots

warnings.warn("azjax.agents is now azjax.bots; import that instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = bots
