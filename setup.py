"""Build the optional C extension (the project's metadata is in pyproject.toml).

``llmcore.providers._speedups`` writes the history's wire pieces for Anthropic, Chat,
Responses, Bedrock Converse and Gemini in C. It is optional: where it cannot be compiled,
llmcore installs without it and builds the same bytes in Python.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "llmcore.providers._speedups",
            sources=["llmcore/providers/_speedups.c"],
            optional=True,
        )
    ]
)
