"""The model proposal message: one per new or changed data-model proposal of the scheduled model review (sent by
:mod:`auditor.service.model_review`; docs/model-review.md, "In the service").

``Subject`` ``DynamoDB model review: <the proposal's title>``; ``Message`` readable text (the change, its price and
headroom before and after, the assumptions); the attributes of :class:`ModelProposalAttributes`, the proposal itself
in ``proposal_json`` as ``ddb-audit model-review --format json`` prints one (docs/contract.md ``model-review``).
"""

from __future__ import annotations

from typing import Literal

from auditor.messages.topic import MessageKind, TopicAttributes

__all__ = ["ModelProposalAttributes"]


class ModelProposalAttributes(TopicAttributes):
    """The message attributes of a model proposal."""

    kind: Literal[MessageKind.MODEL_PROPOSAL] = MessageKind.MODEL_PROPOSAL
    table: str
    #: ``<proposal id>#<change fingerprint>``: the same for a retry, another one when the proposal changes.
    event_id: str
    proposal_json: str
