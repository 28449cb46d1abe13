"""Subscribers of priority groups: the group and its policy's options reach
the gateway, and a pinned_client group's pin is the subscriber's own, kept
when a stream is opened again and let go when the group is unpinned."""

from __future__ import annotations

import threading

import pytest

import jetgate
from conftest import STREAM, wait_for


class Handled:
    """The stream sequences a handler was given, in order."""

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, m) -> None:
        with self._lock:
            self.seqs.append(m.metadata.stream_seq)

    def __len__(self) -> int:
        with self._lock:
            return len(self.seqs)


def publish(client, subject, n):
    return [client.publish(STREAM, subject, b"p").seq for _ in range(n)]


def test_a_pinned_subscriber_keeps_its_pin_when_its_replica_restarts(replicas):
    # The server holds a pinned_client group's pin for priority_timeout
    # (2m here) after the pinned client's last pull. A subscriber whose
    # stream is opened again without its pin would wait that long, and a
    # rival would take the group; with it, it goes on at once.
    first, second = replicas
    pub, via_second = jetgate.Client(first.grpc), jetgate.Client(second.grpc)
    pinned, rival = Handled(), Handled()
    errors: list[Exception] = []
    sub = via_second.subscribe(STREAM, "pinsub", pinned, group="main", on_error=errors.append)
    other = None
    try:
        seqs = publish(pub, "orders.pinsub", 5)
        wait_for(lambda: sub.stats.acked >= 5, 20, "the first five handled and acked")
        # A rival, once the group is pinned to the subscriber.
        other = pub.subscribe(STREAM, "pinsub", rival, group="main", on_error=lambda e: None)
        second.restart()  # SIGKILL: its streams end; NATS, and the pin, stay
        seqs += publish(pub, "orders.pinsub", 5)
        wait_for(lambda: len(pinned) >= 10, 20, "the next five handled by the pinned subscriber, pin kept")
        assert sorted(set(pinned.seqs)) == seqs
        assert rival.seqs == []
        assert sub.stats.reconnects >= 1
        assert not any(getattr(e, "reason", "") == "PIN_ID_MISMATCH" for e in errors)
    finally:
        if other is not None:
            other.close()
        sub.close()
        pub.close()
        via_second.close()


def test_a_subscriber_whose_group_was_unpinned_is_pinned_again(client):
    # Unpinned, the subscriber's streams end PIN_ID_MISMATCH; the pin they
    # carried is let go, and the next stream, opened without it, is pinned
    # anew. Sent again, the stale pin would be refused for ever.
    handled = Handled()
    errors: list[Exception] = []
    sub = client.subscribe(STREAM, "pinagain", handled, group="main", on_error=errors.append)
    try:
        publish(client, "orders.pinagain", 3)
        wait_for(lambda: len(handled) >= 3, 20, "three handled")
        client.unpin(STREAM, "pinagain", group="main")
        publish(client, "orders.pinagain", 3)
        wait_for(lambda: len(handled) >= 6, 20, "three more handled, once pinned again")
        wait_for(lambda: any(getattr(e, "reason", "") == "PIN_ID_MISMATCH" for e in errors), 5, "the stream's end reported")
        (group,) = client.get_consumer(STREAM, "pinagain").state.priority_groups
        assert group.pinned
    finally:
        sub.close()


def test_a_subscriber_of_one_of_several_groups(client):
    handled = Handled()
    sub = client.subscribe(STREAM, "groups", handled, group="b", min_pending=1)
    try:
        seqs = publish(client, "orders.groups", 3)
        wait_for(lambda: len(handled) >= 3, 20, "three handled in group b")
        assert sorted(handled.seqs) == seqs
    finally:
        sub.close()


@pytest.mark.parametrize("opts", [{"group": "nope"}, {"group": "a", "priority": 3}, {}])
def test_a_subscriber_with_priority_options_the_gateway_refuses_fails(client, opts):
    # Refused on opening (INVALID_ARGUMENT): no retry can mend it, so the
    # subscriber stops and wait() raises it. {}: a consumer of two groups
    # needs one named.
    sub = client.subscribe(STREAM, "groups", lambda m: None, **opts)
    try:
        with pytest.raises(jetgate.StreamError) as e:
            sub.wait(20)
        assert e.value.code == "INVALID_ARGUMENT", e.value
    finally:
        sub.close()


@pytest.mark.parametrize("opts", [{"min_pending": 1.5}, {"priority": -1}, {"priority": 10}, {"min_ack_pending": True},
                                  {"min_ack_pending": 2**63}, {"group": 3}])
def test_priority_options_that_are_not_whole_numbers_are_refused(client, opts):
    with pytest.raises(ValueError):
        client.subscribe(STREAM, "groups", lambda m: None, **opts)


def test_a_pinned_subscriber_goes_on_once_its_consumer_is_pinned_no_more(replicas):
    # The consumer's policy is changed from pinned_client, and the
    # subscriber's stream is opened again (its replica restarted) with the
    # pin it had: the gateway refuses a pin for that consumer
    # (INVALID_ARGUMENT), and the subscriber lets it go rather than stop.
    first, second = replicas
    admin, via_second = jetgate.Client(first.grpc), jetgate.Client(second.grpc)
    admin.create_consumer(STREAM, {
        "durable_name": "pinedit", "filter_subjects": ["orders.pinedit"], "priority_groups": ["main"],
        "priority_policy": "pinned_client", "priority_timeout": 2.0,
    })
    handled = Handled()
    errors: list[Exception] = []
    sub = via_second.subscribe(STREAM, "pinedit", handled, group="main", on_error=errors.append)
    try:
        publish(admin, "orders.pinedit", 2)
        wait_for(lambda: sub.stats.acked >= 2, 20, "two handled while pinned")
        admin.update_consumer(STREAM, "pinedit", {"priority_policy": "overflow"}, ["priority_policy"])
        second.restart()
        publish(admin, "orders.pinedit", 2)
        wait_for(lambda: len(handled) >= 4, 20, "two more handled once pinned no more")
        assert sub.wait(0) is False  # still running
        assert any(getattr(e, "code", "") == "INVALID_ARGUMENT" for e in errors), errors
    finally:
        sub.close()
        admin.close()
        via_second.close()


@pytest.mark.parametrize("opts", [{"concurrency": 0}, {"concurrency": -2}, {"nak_delay": -1},
                                  {"nak_delay": 10, "max_nak_delay": 5}, {"ack_batch": 0}, {"ack_batch": 1001}])
def test_subscriber_options_out_of_range_are_refused(client, opts):
    # A reviewer saw concurrency 0 taken for one handler and a negative
    # nak_delay taken as it was; an adopter saw ack_batch 5000 taken (the
    # README: at most 1000) and cut to 1000 without a word.
    with pytest.raises(ValueError):
        client.subscribe(STREAM, "groups", lambda m: None, **opts)


@pytest.mark.parametrize("opts", [{"concurrency": 0}, {"nak_delay": -1}])
def test_aio_subscriber_options_out_of_range_are_refused(gateway, opts):
    import asyncio
    import jetgate.aio

    async def main():
        async with jetgate.aio.Client(gateway.grpc) as c:
            with pytest.raises(ValueError):
                c.subscribe(STREAM, "groups", lambda m: None, **opts)
    asyncio.run(main())
