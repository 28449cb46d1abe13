import type { Message as WireMessage } from "./gen/jetgate/v1/consumer_pb.js";
import type { Op, Sender } from "./sender.js";
/** Where a delivery stands in its stream and consumer (numbers below 2^53). */
export interface Metadata {
    stream: string;
    consumer: string;
    streamSeq: number;
    consumerSeq: number;
    numDelivered: number;
    numPending: number;
    timestamp: Date | undefined;
}
/** Options of Message.nak. */
export interface NakOptions {
    /** Redeliver no sooner than this many milliseconds from now (default 0). */
    delay?: number;
}
/** Options of Message.term. */
export interface TermOptions {
    /** Why the message is ended (dead letters carry it as Jetgate-Dead-Term-Reason). */
    reason?: string;
}
/** Options of Message.extend. */
export interface ExtendOptions {
    /**
     * How long the lease is to last from now, in milliseconds. Unset: one
     * ack_wait (the server's clock restarts). 0: the message is given back now
     * (a Nak: redelivered at once). Up to the gateway's `limits.max_lease`
     * (default 1 h): the jetgate replica that issued the lease keeps it alive
     * that long, and the new token and deadline carry the deadline asked for;
     * that keep-alive ends if the replica stops (the message is then
     * redelivered one ack_wait after its last renewal). Longer, or negative:
     * a SettleError with code InvalidArgument.
     */
    duration?: number;
}
export interface MessageOwner {
    settling(m: Message, op: Op, done: Promise<void>, arg: string | number): void;
    /** extended is told of each extend the gateway confirmed, whoever asked. */
    extended(m: Message): void;
}
/**
 * Message is one leased delivery. ack, nak, term and extend resolve once the
 * gateway confirmed them and reject with a SettleError otherwise. Calls on
 * one message run one after another, each with the token of the latest
 * Extend, so an extend and a settle never race.
 */
export declare class Message {
    #private;
    readonly subject: string;
    readonly data: Uint8Array;
    /** Headers, each with all its values. */
    readonly headers: Record<string, string[]>;
    readonly metadata: Metadata;
    /** @internal */
    constructor(m: WireMessage, sender: Sender, owner?: MessageOwner);
    /** The lease's current token (it changes with each Extend). */
    get token(): string;
    /** When the lease ends unless extended or settled. */
    get leaseDeadline(): Date;
    /** ack acknowledges the message: it is done. */
    ack(): Promise<void>;
    /**
     * nak hands the message back for redelivery, after opts.delay ms. An
     * argument of another shape (`nak(2000)`) or a delay that is not a
     * number rejects with a RangeError, nothing sent: bent into a nak without
     * delay, it would burn a delivery at once.
     */
    nak(opts?: NakOptions): Promise<void>;
    /**
     * term ends the message for good (dead-lettered where configured), with a
     * reason: a string, or options ({ reason }) as DESIGN gives the optional
     * arguments. Anything else rejects with a RangeError, nothing sent.
     */
    term(reason?: string | TermOptions): Promise<void>;
    /**
     * extend restarts the lease's clock: for one ack_wait, or for
     * opts.duration ms (see ExtendOptions). It resolves with the new deadline;
     * the new token it brings is used from then on. With duration 0 the
     * message is given back, as a nak would: it resolves with the moment it
     * went back, and any later settle but `nak()` rejects with LEASE_SETTLED.
     */
    extend(opts?: ExtendOptions): Promise<Date>;
    /**
     * @internal keptAlive reports whether the lease was last extended by a
     * duration, which the gateway keeps alive after its stream ends: closing
     * the stream does not give it back.
     */
    get keptAlive(): boolean;
    /** @internal settled reports whether a settle was asked for. */
    get settleAsked(): boolean;
    /**
     * @internal adopt makes a redelivery of this message (same stream
     * sequence) the lease this object settles.
     */
    adopt(m: WireMessage): void;
    /** @internal settleBy settles with an argument as the subscriber computed it. */
    settleBy(op: Exclude<Op, "extend">, arg: string | number): Promise<void>;
}
