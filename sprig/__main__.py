import sys

from sprig.cli import main

sys.exit(main())
