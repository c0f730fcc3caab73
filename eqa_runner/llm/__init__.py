"""The model layer: every model call goes through litellm here.

Modules: ``client`` (LLMClient: retries, transport), ``config`` (the ``llm:`` schema),
``messages`` (text + images, wire format), ``cache`` (DiskCache), ``usage`` (Completion, Usage,
track_usage), ``secrets`` (keys never in configs), ``estimate`` (dry-run token/cost estimates),
``offline`` (the network-free stand-in), ``loader`` (the lazy litellm import), ``errors``.
Importing this package imports no litellm.
"""

from eqa_runner.errors import ConfigSecretError
from eqa_runner.llm.cache import DiskCache
from eqa_runner.llm.client import LLMClient
from eqa_runner.llm.errors import EmptyReplyError, LLMError
from eqa_runner.llm.estimate import RequestEstimate, estimate_call, image_tokens
from eqa_runner.llm.loader import load_litellm
from eqa_runner.llm.messages import ImagePart, Message, message_images, message_text, system, user
from eqa_runner.llm.offline import OFFLINE_TAG
from eqa_runner.llm.secrets import redact_saved_configs, secret_overrides
from eqa_runner.llm.usage import Completion, Usage, track_usage

__all__ = [
    "OFFLINE_TAG",
    "Completion",
    "ConfigSecretError",
    "DiskCache",
    "EmptyReplyError",
    "ImagePart",
    "LLMClient",
    "LLMError",
    "Message",
    "RequestEstimate",
    "Usage",
    "estimate_call",
    "image_tokens",
    "load_litellm",
    "message_images",
    "message_text",
    "redact_saved_configs",
    "secret_overrides",
    "system",
    "track_usage",
    "user",
]
