import { type Client as RpcClient, type Interceptor } from "@connectrpc/connect";
import { ConsumerService } from "./gen/jetgate/v1/consumer_pb.js";
import { StreamService } from "./gen/jetgate/v1/stream_pb.js";
import { type ConsumerConfigInput, type SeekTarget } from "./admin.js";
import { type ConsumerInfo, type ConsumerResult, type ConsumerSummary, type DeadLetterPage, type EmptyReasonName, type Leases, type PauseState, type RedriveResult, type SeekResult, type StreamSummary } from "./info.js";
import { Message } from "./message.js";
import { Subscription, type Handler, type SubscribeOptions } from "./subscriber.js";
/** TLS settings of the connection to jetgate (PEM strings or buffers). */
export interface TlsOptions {
    ca?: string | Buffer;
    cert?: string | Buffer;
    key?: string | Buffer;
    servername?: string;
}
/** Options of a Client. */
export interface ClientOptions {
    /** host:port of jetgate's gRPC listener (or a URL, http:// or https://). */
    address: string;
    /** Sent as `authorization: Bearer <apiKey>` on every call. */
    apiKey?: string;
    /** true: TLS with the system's roots; an object: TLS with these settings. */
    tls?: boolean | TlsOptions;
    /** connect interceptors run on every call (after the API key's). */
    interceptors?: Interceptor[];
}
/** Options of Client.publish. */
export interface PublishOptions {
    headers?: Record<string, string | string[]>;
    /** Deduplication id (Nats-Msg-Id). */
    msgId?: string;
    /** The message's own time to live, in ms (streams with allow_msg_ttl). */
    ttl?: number;
}
/** What Client.publish returns: the stream's acknowledgement. */
export interface PublishAck {
    stream: string;
    seq: number;
    duplicate: boolean;
}
/** One message of Client.publishBatch. */
export interface BatchMessage {
    subject: string;
    data: Uint8Array | string;
    headers?: Record<string, string | string[]>;
    /** The message's own time to live, in ms. */
    ttl?: number;
}
/** What Client.publishBatch returns: each message's sequence, in order. */
export interface BatchAck {
    stream: string;
    seqs: number[];
}
/** Options of Client.fetch. */
export interface FetchOptions {
    /** Up to this many messages (default 1). */
    batch?: number;
    /** Wait up to this many ms for the first message (default 5000; 0: return at once). */
    expires?: number;
    maxBytes?: number;
    /** The consumer's priority group (unset: its only one). */
    group?: string;
    /** Overflow policy: only while at least this many are pending. */
    minPending?: number;
    /** Overflow policy: only while at least this many acks are pending. */
    minAckPending?: number;
    /** Prioritized policy: 0 is served first, 9 last. */
    priority?: number;
    /** Pinned-client policy: the pin of an earlier fetch (its pinId). */
    pinId?: string;
}
/** What Client.fetch returns: the messages, with why none came and the pin given. */
export interface FetchResult extends Array<Message> {
    /** "" when messages came; else why none did (NO_MESSAGES, PAUSED, PINNED, …). */
    readonly emptyReason: EmptyReasonName;
    /** Pinned-client policy: the pin to send with the next fetch. */
    readonly pinId: string;
}
/** Options of Client.pause: one of them. */
export interface PauseOptions {
    /** Paused until then. */
    until?: Date;
    /** Paused for this many ms from now. */
    duration?: number;
}
/** Options of Client.listDeadLetters. */
export interface DeadLetterPageOptions {
    /** At most this many (default 20, at most 100). */
    pageSize?: number;
    /** The nextPageToken of the previous page. */
    pageToken?: string;
}
/** Client is a connection to jetgate over gRPC (HTTP/2). */
export declare class Client {
    #private;
    /** The generated connect clients, with protobuf's own types (bigint for 64-bit fields). */
    readonly consumers: RpcClient<typeof ConsumerService>;
    readonly streams: RpcClient<typeof StreamService>;
    constructor(opts: ClientOptions);
    /** publish stores one message in a stream and resolves with its sequence. */
    publish(stream: string, subject: string, data: Uint8Array | string, opts?: PublishOptions): Promise<PublishAck>;
    /** publishBatch stores messages all or none (a stream with allow_atomic). */
    publishBatch(stream: string, messages: BatchMessage[]): Promise<BatchAck>;
    /** fetch leases up to opts.batch messages; none within opts.expires is an empty list. */
    fetch(stream: string, consumer: string, opts?: FetchOptions): Promise<FetchResult>;
    /** getConsumer is the consumer's configuration and live state. */
    getConsumer(stream: string, consumer: string): Promise<ConsumerInfo>;
    /** pause stops the server delivering the consumer's messages, for every client, until or for a while. */
    pause(stream: string, consumer: string, opts: PauseOptions): Promise<PauseState>;
    /** resume lets a paused consumer deliver again at once. */
    resume(stream: string, consumer: string): Promise<PauseState>;
    /** unpin releases the pinned client of a pinned_client priority group (unset: the consumer's only group). */
    unpin(stream: string, consumer: string, opts?: {
        group?: string;
    }): Promise<void>;
    /**
     * seek moves where the consumer delivers from, for every client: to a
     * stream sequence ({ sequence }), to the first message stored at or after
     * a time ({ time }), or to its ack floor ({ ackFloor: true }: everything
     * not acknowledged comes again, now). Leases held on it are void. Needs
     * nats-server 2.14 or later (else FAILED_PRECONDITION, SEEK_UNSUPPORTED).
     */
    seek(stream: string, consumer: string, to: SeekTarget): Promise<SeekResult>;
    /**
     * createConsumer creates a durable pull consumer with explicit acks (its
     * name is config.durableName), within the gateway's admin bounds; every
     * replica serves it at once.
     */
    createConsumer(stream: string, config: ConsumerConfigInput): Promise<ConsumerResult>;
    /**
     * updateConsumer sets the fields updateMask names (["ackWait"], or
     * "ackWait,maxDeliver") of a consumer created through the API to their
     * values in config.
     */
    updateConsumer(stream: string, consumer: string, config: ConsumerConfigInput, updateMask: string | string[]): Promise<ConsumerResult>;
    /** deleteConsumer deletes a consumer created through the API: its leases are void, its waiting callers answered. */
    deleteConsumer(stream: string, consumer: string): Promise<void>;
    /**
     * redrive puts dead letters back on their subjects: opts.seqs (their
     * sequences in the dead-letter stream), or all of the consumer's.
     */
    redrive(stream: string, consumer: string, opts?: {
        seqs?: number[];
    }): Promise<RedriveResult>;
    /** listStreams lists the streams this gateway serves consumers of that the caller may read. */
    listStreams(): Promise<StreamSummary[]>;
    /** listConsumers lists the stream's consumers this gateway serves, with the backlog of each. */
    listConsumers(stream: string): Promise<ConsumerSummary[]>;
    /** listLeases says who holds the consumer's live leases, across every replica. */
    listLeases(stream: string, consumer: string): Promise<Leases>;
    /** listDeadLetters is a page of the consumer's dead letters, oldest first. */
    listDeadLetters(stream: string, consumer: string, opts?: DeadLetterPageOptions): Promise<DeadLetterPage>;
    /**
     * subscribe runs handler on each message of the consumer, over a Consume
     * stream: resolved, the message is acked; rejected, nak'ed with a growing
     * delay (or termed, for a FinalError). See SubscribeOptions.
     */
    subscribe(stream: string, consumer: string, handler: Handler, opts?: SubscribeOptions): Subscription;
    /** close ends the connection; close subscriptions first. */
    close(): void;
}
