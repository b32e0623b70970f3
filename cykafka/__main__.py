"""`python -m cykafka`: the `cykafka` command (cykafka.cli)."""

import sys

from cykafka.cli import main

sys.exit(main())
