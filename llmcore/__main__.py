"""``python -m llmcore``: the ``llmcore`` command."""

from llmcore.cli import main

main()
