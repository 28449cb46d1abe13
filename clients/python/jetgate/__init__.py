"""jetgate: a client of the jetgate gateway (NATS JetStream durable pull
consumers over gRPC), with a subscriber that manages leases the way Pub/Sub's
client libraries do. jetgate.aio has the same for asyncio. A subscriber
without on_error logs its errors to the "jetgate" logger."""

from jetgate._api import BatchAck, BatchMessage, FetchResult, PauseState, RedriveFailure, RedriveResult
from jetgate._client import Client, Message
from jetgate._errors import Error, Final, HandlerError, LeaseDropped, LeaseLost, SettleError, StreamError
from jetgate._held import Stats
from jetgate._message import Metadata, PublishAck
from jetgate._sync import Subscriber

__all__ = [
    "Client", "Message", "Subscriber", "Metadata", "PublishAck", "Stats",
    "BatchMessage", "BatchAck", "FetchResult", "PauseState", "RedriveResult", "RedriveFailure",
    "Error", "SettleError", "Final", "HandlerError", "LeaseDropped", "LeaseLost", "StreamError",
]
