import sys

from kprof.commands.cli import main

sys.exit(main())
