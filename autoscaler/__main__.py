import sys

from autoscaler.cli import main

sys.exit(main())
