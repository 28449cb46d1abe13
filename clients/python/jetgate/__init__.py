"""jetgate: a client of the jetgate gateway (NATS JetStream durable pull
consumers over gRPC), with a subscriber that manages leases the way Pub/Sub's
client libraries do. jetgate.aio has the same for asyncio."""

from jetgate._client import Client, Message
from jetgate._errors import Error, Final, HandlerError, LeaseDropped, LeaseLost, SettleError, StreamError
from jetgate._held import Stats
from jetgate._message import Metadata, PublishAck
from jetgate._sync import Subscriber

__all__ = [
    "Client", "Message", "Subscriber", "Metadata", "PublishAck", "Stats",
    "Error", "SettleError", "Final", "HandlerError", "LeaseDropped", "LeaseLost", "StreamError",
]
