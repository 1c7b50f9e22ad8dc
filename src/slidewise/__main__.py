import sys

from slidewise.cli import main

sys.exit(main())
