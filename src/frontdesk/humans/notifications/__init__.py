"""Operator notifications: typed events recorded in the caller's transaction, resolved to
subscribers, and delivered by e-mail, Telegram or a signed webhook from a job, with an attempt
trail. See ``docs/notifications.md``."""

from frontdesk.humans.notifications.build import build_routes
from frontdesk.humans.notifications.dispatch import Dispatcher
from frontdesk.humans.notifications.events import (
    KINDS,
    ROUTES,
    ClaimRejectedSpike,
    DeliveryFailed,
    Event,
    Handoff,
    Kind,
    ModelBudgetSpent,
    NeedsReply,
    NewLead,
    Recipient,
    RouteName,
)
from frontdesk.humans.notifications.record import DISPATCH_NOTIFICATION, notify
from frontdesk.humans.notifications.routes import (
    Delivery,
    DeliveryError,
    MappingSecrets,
    Route,
    RouteUnavailable,
    SecretSource,
)
from frontdesk.humans.notifications.subscriptions import add_webhook, assign, subscribe
from frontdesk.humans.notifications.webhook import sign, verify

__all__ = [
    "DISPATCH_NOTIFICATION",
    "KINDS",
    "ROUTES",
    "ClaimRejectedSpike",
    "Delivery",
    "DeliveryError",
    "DeliveryFailed",
    "Dispatcher",
    "Event",
    "Handoff",
    "Kind",
    "MappingSecrets",
    "ModelBudgetSpent",
    "NeedsReply",
    "NewLead",
    "Recipient",
    "Route",
    "RouteName",
    "RouteUnavailable",
    "SecretSource",
    "add_webhook",
    "assign",
    "build_routes",
    "notify",
    "sign",
    "subscribe",
    "verify",
]
