"""The model gateway: named slots (``chat``, ``utility``, ``embeddings``) configured by strings."""

from frontdesk.platform.models.gateway import ModelClient, ModelGateway, ModelSpec, parse_model_spec

__all__ = ["ModelClient", "ModelGateway", "ModelSpec", "parse_model_spec"]
