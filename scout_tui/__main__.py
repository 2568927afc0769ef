"""`python -m scout_tui` runs the same entry point as the `scout-tui` script."""

from scout_tui.cli import main

raise SystemExit(main())
