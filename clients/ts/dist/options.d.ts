import type { Message } from "./message.js";
/** A subscriber's handler: resolve to ack, reject to nak (or term, for a FinalError). */
export type Handler = (m: Message) => unknown;
/** Options of Client.subscribe. Durations are in milliseconds. */
export interface SubscribeOptions {
    /** Most messages held at once, in handlers or waiting for one (default 100). */
    maxMessages?: number;
    /** Most bytes (subject, data and headers) held at once (default: no limit). */
    maxBytes?: number;
    /** Most handlers running at once (default maxMessages). */
    concurrency?: number;
    /** How long a message's lease is extended in all before it is let go (default 1h). */
    maxLease?: number;
    /** Settles go out after a few ms, or at once when this many wait (default 100, at most 1000). */
    ackBatch?: number;
    /**
     * Called with every error: handler failures, failed settles, leases let go
     * or lost, stream breaks. Unset: each is written with console.error (a
     * handler's error with its stack); set, nothing is written.
     */
    onError?: (err: unknown, m?: Message) => void;
    /** Delay of the Nak after a handler fails: min × 2^(deliveries−1), at most max (default 1s and 10m). */
    retry?: {
        min?: number;
        max?: number;
    };
    /** The stream's heartbeat; no word for 3 heartbeats and it is opened again (default 5s). */
    heartbeat?: number;
    /** The consumer's priority group, as for fetch (unset: its only one). */
    group?: string;
    /** Overflow policy, as for fetch. */
    minPending?: number;
    /** Overflow policy, as for fetch. */
    minAckPending?: number;
    /** Prioritized policy, as for fetch: 0 is served first, 9 last. */
    priority?: number;
}
/** Options of Subscription.close. */
export interface CloseOptions {
    /** drain (default): running handlers finish, the rest is nak'ed; nak: everything in hand is nak'ed now. */
    mode?: "drain" | "nak";
    /** drain: after this many ms, what still runs is nak'ed too (default 30s). */
    timeout?: number;
}
/** Counters of a subscription. */
export interface SubscriptionStats {
    received: number;
    acked: number;
    naked: number;
    termed: number;
    handlerErrors: number;
    settleFailures: number;
    /** Leases extended, by the subscriber or by a handler's own extend(). */
    extended: number;
    /** Leases held for maxLease and let go (their messages come back after ack_wait). */
    leasesDropped: number;
    /** Leases handed back by closing the stream (the gateway naks them). */
    returned: number;
    /** Leases an extend could not keep (the gateway said it was gone). */
    leasesLost: number;
    /** Redeliveries of a message still in hand, or whose handler finished on a void lease, settled with that handler's outcome. */
    adopted: number;
    reconnects: number;
    /** Now: messages and bytes held (in a handler or waiting for one), handlers running. */
    held: number;
    heldBytes: number;
    running: number;
}
