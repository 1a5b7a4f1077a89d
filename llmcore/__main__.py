"""``python -m llmcore``: the ``llmcore`` command."""

from llmcore.cli import main

if __name__ == "__main__":  # not when a worker process of `llmcore audit --jobs` starts
    main()
