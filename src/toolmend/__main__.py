"""``python -m toolmend``: the command line."""

from toolmend.cli import main

main()
