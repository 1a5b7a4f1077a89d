"""The vendored cassette folders hold data only: never collect tests from them."""

collect_ignore = ["pydantic-ai", "llm", "llm-gemini", "llm-anthropic"]
