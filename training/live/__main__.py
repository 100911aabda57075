"""python -m training.live: the live run's command line, started without importing torch first."""
from . import cli

cli()
