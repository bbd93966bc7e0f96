"""frontdesk: a trustworthy LLM agent on a business's customer channels."""

__version__ = "0.1.0"
__all__ = ["__version__"]
