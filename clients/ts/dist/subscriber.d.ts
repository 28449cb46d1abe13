import { type Client as RpcClient } from "@connectrpc/connect";
import { ConsumerService } from "./gen/jetgate/v1/consumer_pb.js";
import { Message, type MessageOwner } from "./message.js";
import { type Op } from "./sender.js";
import type { CloseOptions, Handler, SubscribeOptions, SubscriptionStats } from "./options.js";
export type { CloseOptions, Handler, SubscribeOptions, SubscriptionStats } from "./options.js";
/**
 * Subscription runs a handler on a consumer's messages over Consume streams:
 * one, and after a stream breaks, the next at once with the room the
 * messages still in hand leave, and another as they free half of it.
 * Create it with Client.subscribe; stop it with close.
 */
export declare class Subscription implements MessageOwner {
    #private;
    /**
     * Resolves once the subscription has stopped (after close, or an error no
     * retry can mend) and, after a close, what it held is handed back.
     */
    readonly closed: Promise<void>;
    /** @internal */
    constructor(api: RpcClient<typeof ConsumerService>, stream: string, consumer: string, handler: Handler, opts: SubscribeOptions);
    /** The error that ended the subscription (an error no retry can mend, on opening), if one did. */
    get error(): unknown;
    /** A copy of the counters. */
    get stats(): SubscriptionStats;
    /**
     * close stops the subscription. drain lets running handlers finish (within
     * timeout) and their settles land, then hands back everything else in
     * hand; nak hands back everything in hand at once (a handler still running
     * then settles nothing). Handing back is closing the stream, whose
     * unsettled leases the gateway naks (or, for leases of a stream that broke
     * earlier, a confirmed Nak): nothing is left to wait for ack_wait.
     * Called from one of this subscription's own handlers, it starts the close
     * and resolves at once: the drain waits for that handler too, which could
     * not finish while it awaited the drain. `closed` says when it is done.
     */
    close(opts?: CloseOptions): Promise<void>;
    /** @internal MessageOwner: every confirmed extend, the handler's own and the subscriber's. */
    extended(m: Message): void;
    /** @internal MessageOwner: every settle of a subscriber's message passes here. */
    settling(m: Message, op: Op, done: Promise<void>, arg: string | number): void;
}
